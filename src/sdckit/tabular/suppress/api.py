"""The public entry of secondary cell suppression: :func:`suppress`, for one table or for linked
tables given as a list."""

from __future__ import annotations

from typing import Any

from sdckit.core.errors import ParameterError
from sdckit.core.params import validated
from sdckit.tabular.suppress import params
from sdckit.tabular.suppress.linked import suppress_linked
from sdckit.tabular.suppress.result import SuppressionResult
from sdckit.tabular.suppress.single import suppress_table
from sdckit.tabular.table import Table


@validated(method=params.METHOD, cost=params.COST, time_limit=params.TIME_LIMIT)
def suppress(table: Table, rules: Any = None, primary: Any = None, method: str = "optimal",
             cost: str = "value", time_limit: float | None = None) -> SuppressionResult:
    """Protect ``table`` by primary and secondary cell suppression.

    Parameters
    ----------
    table : Table, or list of Tables
        A list: linked tables protected together (:func:`sdckit.tabular.linked.suppress_linked`).
    rules : Rule or list of rules, optional
        Sensitivity rules (:mod:`sdckit.tabular.rules`) that decide the primary cells and their
        protection levels.
    primary : boolean mask over ``table.cells`` or list of cell keys, optional
        Further primary cells (level 10% of |value| unless a rule asks more).
    method : {"optimal", "fast"}
        Exact MILP with cut generation (Fischetti & Salazar 2001), or the flow heuristic.
    cost : {"value", "freq", "unity"}
        What a suppressed cell costs.
    time_limit : float, optional
        CPU seconds of this process (:func:`~sdckit.tabular.cutloop.cpu_time`, not wall-clock:
        a busy machine searches as far as an idle one) for ``optimal``; when it stops the search, the best
        audited-safe pattern found is returned with ``optimal=False`` and ``gap``, its relative
        distance to the proven lower bound. Default :data:`.limits.OPTIMAL_TIME_LIMIT` (50 s: with the final
        clean-up and audit, about a minute); ``math.inf`` searches until the optimum is proved.
        For ``fast``, a deadline for its improvement steps instead of their work budgets (which
        are capped by ``POLISH_SECONDS`` on the few tables where they would take longer).
        Without it ``fast`` returns the same pattern on any machine, unless that cap stops it,
        and so does ``optimal`` when it proves its optimum within its limit; a limit that stops
        the search makes the pattern depend on the processor's speed (not on the machine's load).

    Returns
    -------
    SuppressionResult
        Never an unprotected pattern: the audit runs before it returns.

    Raises
    ------
    ParameterError
        A parameter outside its rule (:mod:`sdckit.tabular.suppress.params`), or ``table`` not a Table.
    DataError
        A primary cell that no pattern can protect (named by its codes).
    """
    if isinstance(table, (list, tuple)):  # linked tables, one model over all cells (issue 14)
        return suppress_linked(table, rules, primary, method, cost, time_limit)
    if not isinstance(table, Table):
        raise ParameterError(f"The 'table' parameter of suppress must be a Table. Got {type(table).__name__} instead.")
    return suppress_table(table, rules, primary, method, cost, time_limit)
