"""The restricted mode's auditor (DESIGN.md section 7; issue 15, issue 27): what the answered
exact COUNT and SUM queries reveal together.

:class:`Auditor` (:mod:`~sdckit.query.audit.auditor`) refuses an answer that would make a total
over fewer than k records derivable (Chin & Ozsoyoglu's audit, modulo secret primes:
:mod:`~sdckit.query.audit.atoms`, :mod:`~sdckit.query.audit.engine`,
:mod:`~sdckit.query.audit.modp`, :mod:`~sdckit.query.audit.support`,
:mod:`~sdckit.query.audit.wspace`); :class:`IntervalAudit` (:mod:`~sdckit.query.audit.interval`)
refuses a SUM that would narrow a person's or a small group's total to within p%.

The names are imported on first use (numba for the auditor, scipy's LP for the interval audit),
so that the service starts without them.
"""

from sdckit.core.lazy import lazy_exports

__all__ = ["Auditor", "Decision", "IntervalAudit"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "Auditor": "sdckit.query.audit.auditor",
    "Decision": "sdckit.query.audit.auditor",
    "IntervalAudit": "sdckit.query.audit.interval",
})
