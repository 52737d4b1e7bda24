"""Searches of the generalization lattice for k-minimal generalizations (seed 003 section 4.1).

A node *satisfies* when the records of the classes that violate some criterion — they are
suppressed — number at most MaxSup. The k-minimal generalizations (seed 003 Definition 5)
are the satisfying nodes with no satisfying node below them.

* :func:`optimal` uses monotonicity (a satisfying node implies every node above satisfies;
  a failing one, every node below fails). It visits nodes by height; from each unknown node
  it walks a path to the top and binary-searches it for the lowest satisfying node, tagging
  the whole up-set of every satisfying node and the whole down-set of every failing one (slices
  of the lattice grid), so each node is evaluated at most once and a tagged node never (the
  predictive tagging of Flash and OLA; Kohlmayer et al. 2012). Nodes are evaluated on
  frequency tables rolled up from finer ones (:mod:`.lattice`). Criteria that are not
  monotone are then checked on every satisfying node, without pruning. It returns ARX's
  optimum: the satisfying node with the best metric (:mod:`.metrics`; ties: lower height as in
  ARX, then lexicographic where ARX takes the first its traversal meets). When the metric is
  monotone (every ARX metric with no suppression allowed, ``height`` always) the optimum is a
  k-minimal node and only those are scored; otherwise every satisfying node is a candidate,
  scored in the order of a lower bound from its levels alone (:meth:`.Scorer.bounds`) until
  the bound passes the best score found, so the result stays exact.
* :func:`samarati` is Samarati's binary search on heights: the lowest height with a
  satisfying node, and the best node there by the metric.
* :func:`exhaustive` evaluates every node and scores every satisfying node, without bounds
  or monotonicity; it is the oracle of the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sdckit.anonymity.lattice import Evaluator, Lattice
from sdckit.anonymity.metrics import DEFAULT_METRIC, Scorer, check_metric, is_monotone, node_classes
from sdckit.core.errors import DataError

Progress = Callable[[int, int, str], None] | None


@dataclass(frozen=True)
class SearchResult:
    """The chosen node, its metrics, the k-minimal nodes found and the work done.

    ``minimal`` holds every k-minimal node for ``optimal`` and ``exhaustive``; for
    ``samarati`` the satisfying nodes at the lowest satisfying height (all k-minimal, but
    not necessarily all of them). ``evaluated`` counts the nodes checked against the criteria;
    ``extra["scored"]`` the candidates whose metric was computed.
    """

    node: tuple[int, ...]
    metrics: dict[str, float]
    minimal: tuple[tuple[int, ...], ...]
    evaluated: int
    lattice_size: int
    extra: dict = field(default_factory=dict)


def _best(ev: Evaluator, candidates, metric: str,
          bounded: bool = True) -> tuple[tuple[int, ...], dict[str, float], int]:
    """The candidate with the lowest ``metric`` (ties: lower height, then lexicographic), all
    its metrics and the number of candidates scored. With ``bounded``, candidates are scored in
    the order of their lower bound and the scoring stops once the bound passes the best score
    (with a relative margin of 1e-9 against rounding: a skipped node is certainly worse)."""
    scorer = Scorer(ev.enc)
    array = np.asarray(candidates, dtype=np.int64).reshape(-1, len(ev.enc.quasi))
    bounds = scorer.bounds(array, metric) if bounded else None
    keys = tuple(array.T[::-1]) + (array.sum(axis=1),) + (() if bounds is None else (bounds,))
    best_key, best_classes, scored = None, None, 0
    for i in np.lexsort(keys).tolist():  # by bound, height, then lexicographically
        if (best_key is not None and bounds is not None
                and bounds[i] > best_key[0] + 1e-9 * max(1.0, abs(best_key[0]))):
            break  # every later candidate's bound is at least this one
        node = tuple(int(x) for x in array[i])
        classes = node_classes(ev, node)
        scored += 1
        key = (scorer.value(classes, metric), sum(node), node)
        if best_key is None or key < best_key:
            best_key, best_classes = key, classes
    return best_key[2], scorer.values(best_classes), scored


def _no_solution(ev: Evaluator) -> DataError:
    top = ev.evaluate(tuple(int(h) for h in ev.enc.heights))
    needed = int(top.sizes[top.violating.any(axis=1)].sum())  # exact (the check may have stopped early)
    names = ", ".join(c.label() for c in ev.criteria)
    return DataError(
        f"No generalization satisfies {names} with at most {ev.allowed} suppressed record(s): even "
        f"the fully generalized table needs {needed} suppressed. Relax the criteria or allow "
        "more suppression."
    )


def _minimal_of(lat: Lattice, passing: np.ndarray) -> list[tuple[int, ...]]:
    """Passing nodes with no other passing node below them, by height then lexicographically."""
    minimal = lat.minimal(passing)
    return [tuple(int(x) for x in lat.nodes[i]) for i in lat.order[minimal[lat.order]]]


def _next_up(lat: Lattice) -> np.ndarray:
    """For every node, the next node of its path to the top: the relatively lowest attribute
    (level / height; the first on ties) raised by one level; -1 at the top."""
    heights = lat.heights
    ratio = np.where(lat.nodes < heights, lat.nodes / np.maximum(heights, 1), np.inf)
    raise_ = np.argmin(ratio, axis=1)
    step = np.zeros_like(lat.nodes)
    step[np.arange(len(lat)), raise_] = 1
    nxt = np.ravel_multi_index(tuple((lat.nodes + step).T), lat.shape, mode="clip")
    return np.where(np.isinf(ratio).all(axis=1), -1, nxt)


def _tag_monotone(ev: Evaluator, lat: Lattice, progress: Progress) -> np.ndarray:
    """Status of every node under the monotone criteria: +1 satisfies, -1 fails.

    Predictive tagging in both directions: a satisfying node tags its up-set, a failing one
    its down-set (grid slices), and a tagged node is never evaluated."""
    status = np.zeros(len(lat), dtype=np.int8)
    grid = status.reshape(lat.shape)  # a view: tagging a slice of it tags ``status``
    heights = tuple(int(h) for h in lat.heights)
    if not ev.passes(heights, monotone_only=True):
        raise _no_solution(ev)
    grid[heights] = 1
    nodes = [tuple(v) for v in lat.nodes.tolist()]
    nxt = _next_up(lat).tolist()
    for start in lat.order.tolist():
        if status[start]:
            continue
        path = [start]
        while status[path[-1]] != 1:  # up to the first node known to satisfy
            path.append(nxt[path[-1]])
        lo, hi = 0, len(path) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            i = path[mid]
            known = status[i]
            if known == 1 or (known == 0 and ev.passes(nodes[i], monotone_only=True)):
                up = grid[lat.up_slice(nodes[i])]
                up[up == 0] = 1
                hi = mid
            else:
                down = grid[lat.down_slice(nodes[i])]
                down[down == 0] = -1
                lo = mid + 1
        if progress is not None:
            progress(int(np.count_nonzero(status)), len(lat), "lattice")
    return status


def optimal(ev: Evaluator, metric: str = DEFAULT_METRIC, progress: Progress = None) -> SearchResult:
    """ARX's optimum: the satisfying node with the best ``metric`` (see the module docstring)."""
    check_metric(metric, "the full-domain search")
    lat = Lattice(ev.enc.heights)
    status = _tag_monotone(ev, lat, progress)
    passing = status == 1
    if not ev.monotone.all():
        for idx in np.flatnonzero(passing):
            passing[idx] = ev.passes(tuple(lat.nodes[idx]))
        if not passing.any():
            raise _no_solution(ev)
    minimal = _minimal_of(lat, passing)
    candidates = minimal if is_monotone(metric, ev.allowed) else lat.nodes[lat.order[passing[lat.order]]]
    node, values, scored = _best(ev, candidates, metric)
    return SearchResult(node, values, tuple(minimal), len(ev.results), len(lat), {"scored": scored})


def samarati(ev: Evaluator, metric: str = DEFAULT_METRIC, progress: Progress = None) -> SearchResult:
    """Samarati's binary search on heights (seed 003 section 4.1): the best node by ``metric``
    among the satisfying nodes of the lowest satisfying height (ARX's optimum only when that
    height holds it, as it always does for ``height``)."""
    check_metric(metric, "the full-domain search")
    lat = Lattice(ev.enc.heights)
    top = int(lat.height.max())

    def satisfying(h: int) -> list[tuple[int, ...]]:
        return [tuple(int(x) for x in v) for v in lat.nodes[lat.height == h] if ev.passes(tuple(v))]

    if not satisfying(top):
        raise _no_solution(ev)
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi) // 2
        if progress is not None:
            progress(lo, top, "heights")
        if satisfying(mid):
            hi = mid
        else:
            lo = mid + 1
    found = satisfying(lo)
    node, values, scored = _best(ev, found, metric)
    return SearchResult(node, values, tuple(found), len(ev.results), len(lat), {"height": lo, "scored": scored})


def exhaustive(ev: Evaluator, metric: str = DEFAULT_METRIC, progress: Progress = None) -> SearchResult:
    """Evaluate every node (each rolled up from the bottom table) and score every satisfying
    one; the tests' oracle."""
    check_metric(metric, "the full-domain search")
    lat = Lattice(ev.enc.heights)
    passing = np.zeros(len(lat), dtype=bool)
    for i, v in enumerate(lat.nodes):
        passing[i] = ev.evaluate(tuple(v), source=ev.bottom).suppressed <= ev.allowed
        if progress is not None:
            progress(i + 1, len(lat), "lattice")
    if not passing.any():
        raise _no_solution(ev)
    minimal = _minimal_of(lat, passing)
    node, values, scored = _best(ev, lat.nodes[passing], metric, bounded=False)
    return SearchResult(node, values, tuple(minimal), len(ev.results), len(lat), {"scored": scored})


ALGORITHMS = {"optimal": optimal, "samarati": samarati, "exhaustive": exhaustive}
