"""Information-loss metrics of a full-domain generalization with tuple suppression.

All are computed from the bottom group table (distinct original rows with counts) mapped to
the node, never from the records; a suppressed record counts as fully generalized.

* ``"loss"`` — categorical precision (seed 004 section III-A): a value generalized to level
  ``l`` of a hierarchy of height ``h`` loses ``l/h``; averaged over all cells.
* ``"discernibility"`` — Bayardo & Agrawal: ``sum |E|^2`` over released classes plus ``n``
  for each suppressed record.
* ``"aecs"`` — average equivalence-class size of the released records, ``(n - s) / classes``.
* ``"entropy"`` — non-uniform entropy (Gionis & Tassa; ARX): the bits needed to recover each
  original value from its generalized one, ``sum -log2(count(v) / count(gen(v)))`` over all
  cells, counts in the input table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdckit.anonymity.lattice import Evaluator, NodeStats
from sdckit.utility.precision import discernibility_from_sizes

METRICS = ("loss", "discernibility", "aecs", "entropy")


def loss(node: Sequence[int], heights: np.ndarray, n: int, suppressed: int) -> float:
    """Categorical precision loss of ``node`` with ``suppressed`` records fully generalized."""
    h = np.asarray(heights, dtype=float)
    ratio = np.divide(np.asarray(node, float), h, out=np.zeros(len(h)), where=h > 0)
    return float(((n - suppressed) * (ratio.mean() if len(h) else 0.0) + suppressed) / n)


def size_metrics(sizes: np.ndarray, bad: np.ndarray, node: Sequence[int], heights: np.ndarray,
                 n: int) -> dict[str, float]:
    """The metrics that need only the classes' sizes: ``loss``, ``discernibility``, ``aecs``,
    with ``suppressed`` (records in violating classes ``bad``) and ``classes`` (kept)."""
    s = int(sizes[bad].sum())
    kept = sizes[~bad]
    return {
        "loss": loss(node, heights, n, s),
        "discernibility": float(discernibility_from_sizes(kept, s, n)),
        "aecs": float((n - s) / len(kept)) if len(kept) else float("inf"),
        "suppressed": s,
        "classes": int(len(kept)),
    }


def quick_metric(stats: NodeStats, heights: np.ndarray, n: int, metric: str) -> float | None:
    """``metric`` from a node's class sizes alone (None for ``"entropy"``, which needs values).
    ``stats`` must be of a satisfying node (its suppression is then counted in full)."""
    if metric == "entropy":
        return None
    if metric == "loss":
        return loss(stats.node, heights, n, stats.suppressed)
    return size_metrics(stats.sizes, stats.violating.any(axis=1), stats.node, heights, n)[metric]


def node_metrics(ev: Evaluator, node: Sequence[int]) -> dict[str, float]:
    """Every metric of ``node`` (the generalization with its required suppression)."""
    node = tuple(int(x) for x in node)
    bottom = ev.bottom
    codes, cls, sizes, violating = ev.bottom_classes(node)
    bad_class = violating.any(axis=1)
    n = int(bottom.counts.sum())
    by_size = size_metrics(sizes, bad_class, node, ev.enc.heights, n)
    row_suppressed = bad_class[cls]
    entropy = 0.0
    w = bottom.counts.astype(float)
    for j in range(len(node)):
        c0 = np.bincount(bottom.columns[j], weights=w)
        cg = np.bincount(codes[j], weights=w)
        per_row = np.where(row_suppressed, np.log2(n / c0[bottom.columns[j]]),
                           np.log2(cg[codes[j]] / c0[bottom.columns[j]]))
        entropy += float((w * per_row).sum())
    names = ("loss", "discernibility", "aecs")
    return {**{k: by_size[k] for k in names}, "entropy": entropy,
            **{k: v for k, v in by_size.items() if k not in names}}
