"""The parameter rules of the suppression functions (:func:`sdckit.core.params.validated`), declared
once for :func:`~sdckit.tabular.suppress.suppress`, :func:`~sdckit.tabular.suppress.linked.suppress_linked`
and :func:`~sdckit.tabular.modular.suppress_modular`."""

from __future__ import annotations

from sdckit.core.params import Interval, IsNone, Options

#: The two methods of one model (``suppress_modular`` takes them too, per sub-table).
METHOD = Options(("optimal", "fast"))
#: What a suppressed cell costs (:func:`~sdckit.tabular.suppress.problem.cell_costs`).
COST = Options(("value", "freq", "unity"))
#: CPU seconds, ``math.inf`` for no limit, None for the default.
TIME_LIMIT = [IsNone(), Interval(float, 0, None, closed="neither")]
