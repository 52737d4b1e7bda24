"""A sequential Monte-Carlo test with uniformly bounded resampling risk (Gandy 2009).

A Monte-Carlo p-value is the chance ``p`` that a replicate "exceeds" (here: that a null
sample's Hellinger distance is at or above the observed one; DESIGN.md section 3). With
i.i.d. replicates the number of exceedances ``S_n`` after ``n`` replicates is binomial
``(n, p)``, and the test must decide whether ``p <= alpha`` (the release is flagged) or
``p > alpha`` (plausibly deniable).

Gandy, A. (2009). Sequential implementation of Monte Carlo tests with uniformly bounded
resampling risk. *Journal of the American Statistical Association* 104(488), 1504-1511:
draw replicates one at a time and stop as soon as ``S_n >= U_n`` (decide ``p > alpha``) or
``S_n <= L_n`` (decide ``p <= alpha``). The boundaries are computed recursively under
``p = alpha`` so that the chance of having crossed the upper (lower) boundary by step ``n`` is at
most ``eps_n = eps * n / (n + k)`` (his spending sequence, ``k = 1000``); then for *every* ``p``
the chance of a decision other than the one the exact p-value gives (the resampling risk) is at
most ``eps``. Here the test is truncated at a budget of replicates: when the budget is spent
between the boundaries, no decision is made (``"borderline"``) — truncation only removes
decisions, so the bound on a wrong one still holds.

The p-value is reported as ``S_n / n`` with its exact Clopper-Pearson interval (Clopper &
Pearson 1934, *Biometrika* 26, 404-413).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import beta

#: Gandy's spending sequence ``eps_n = eps * n / (n + SPENDING_K)``.
SPENDING_K = 1000

DENIABLE = "deniable"
FLAGGED = "flagged"
BORDERLINE = "borderline"
#: The three verdicts of the verification: ``p > alpha``, ``p <= alpha``, undecided within budget.
VERDICTS = (DENIABLE, FLAGGED, BORDERLINE)


@lru_cache(maxsize=16)
def boundaries(alpha: float, risk: float, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Gandy's (2009) stopping boundaries ``U_n`` and ``L_n`` for ``n = 0 .. budget``.

    Stop at the first ``n`` with ``S_n >= U[n]`` (decide ``p > alpha``) or ``S_n <= L[n]`` (decide
    ``p <= alpha``); ``U[n] = n + 1`` and ``L[n] = -1`` mean "cannot stop at ``n``". Computed under
    ``p = alpha`` on the distribution of ``S_n`` over the paths not yet stopped, so that the total
    probability of hitting each boundary by step ``n`` is at most ``risk * n / (n + 1000)``.

    Examples
    --------
    Every replicate an exceedance: the chance ``0.05^n`` of that under ``p = 0.05`` first falls
    below ``1e-3 * n / (n + 1000)`` at ``n = 5`` (``3.1e-7 <= 5.0e-6``; at ``n = 4``,
    ``6.3e-6 > 4.0e-6``):

    >>> upper, lower = boundaries(0.05, 1e-3, 10)
    >>> int(np.argmax(upper <= np.arange(11)))
    5
    """
    upper = np.empty(budget + 1, dtype=np.int64)
    lower = np.empty(budget + 1, dtype=np.int64)
    upper[0], lower[0] = 1, -1
    alive = np.array([1.0])  # P(S_n = j and not stopped before n), j = 0..n
    spent_up = spent_low = 0.0
    for n in range(1, budget + 1):
        step = np.zeros(n + 1)
        step[:-1] += alive * (1.0 - alpha)
        step[1:] += alive * alpha
        eps_n = risk * n / (n + SPENDING_K)
        tail = np.cumsum(step[::-1])[::-1]  # P(S_n >= j)
        head = np.cumsum(step)              # P(S_n <= j)
        ok_up = np.flatnonzero(spent_up + tail <= eps_n)
        ok_low = np.flatnonzero(spent_low + head <= eps_n)
        u = int(ok_up[0]) if len(ok_up) else n + 1
        lo = int(ok_low[-1]) if len(ok_low) else -1
        if u <= lo:  # cannot happen for risk < 1/2; kept safe: no decision at this n
            u, lo = n + 1, -1
        if u <= n:
            spent_up += float(tail[u])
            step[u:] = 0.0
        if lo >= 0:
            spent_low += float(head[lo])
            step[:lo + 1] = 0.0
        upper[n], lower[n] = u, lo
        alive = step
    return upper, lower


def clopper_pearson(exceed: int, n: int, confidence: float = 0.99) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided interval for a binomial ``p`` from ``exceed`` of ``n``.

    Examples
    --------
    No exceedance in 10: the upper limit solves ``(1 - p)^10 = 0.025``.

    >>> round(clopper_pearson(0, 10, 0.95)[1], 6), round(1 - 0.025 ** (1 / 10), 6)
    (0.308497, 0.308497)
    """
    if n <= 0:
        return 0.0, 1.0
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if exceed == 0 else float(beta.ppf(tail, exceed, n - exceed + 1))
    high = 1.0 if exceed == n else float(beta.ppf(1.0 - tail, exceed + 1, n - exceed))
    return low, high


@dataclass(frozen=True)
class Decision:
    """Where a stream of replicates stopped: the verdict, the count and the p-value's interval."""

    verdict: str
    exceed: int
    replicates: int
    interval: tuple[float, float]

    @property
    def p_value(self) -> float:
        return self.exceed / self.replicates if self.replicates else float("nan")


def decide(exceed: int, n: int, alpha: float, risk: float, budget: int) -> str | None:
    """The verdict after ``n`` replicates with ``exceed`` exceedances, or ``None`` to go on."""
    upper, lower = boundaries(alpha, risk, budget)
    if exceed >= upper[n]:
        return DENIABLE
    if exceed <= lower[n]:
        return FLAGGED
    return BORDERLINE if n >= budget else None


def run_sequential(stream, alpha: float, risk: float, budget: int, confidence: float = 0.99) -> Decision:
    """Draw from ``stream`` (an iterator of bools: did the replicate exceed?) until
    :func:`decide` stops, at most ``budget`` replicates."""
    exceed = n = 0
    verdict = None
    for hit in stream:
        n += 1
        exceed += bool(hit)
        verdict = decide(exceed, n, alpha, risk, budget)
        if verdict is not None:
            break
    if verdict is None:  # the stream ran out before the budget
        verdict = BORDERLINE
    return Decision(verdict, exceed, n, clopper_pearson(exceed, n, confidence))
