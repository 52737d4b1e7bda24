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

from sdckit.anonymity.lattice import Evaluator, GroupTable, NodeStats

METRICS = ("loss", "discernibility", "aecs", "entropy")


def quick_metric(stats: NodeStats, heights: np.ndarray, n: int, metric: str) -> float | None:
    """``metric`` from a node's class sizes alone (None for ``"entropy"``, which needs values)."""
    bad = stats.violating.any(axis=1)
    s = int(stats.sizes[bad].sum())
    kept = stats.sizes[~bad]
    if metric == "loss":
        h = heights.astype(float)
        ratio = np.divide(np.asarray(stats.node, float), h, out=np.zeros(len(h)), where=h > 0)
        return ((n - s) * (ratio.mean() if len(h) else 0.0) + s) / n
    if metric == "discernibility":
        return float((kept.astype(float) ** 2).sum() + s * n)
    if metric == "aecs":
        return float((n - s) / len(kept)) if len(kept) else float("inf")
    return None


def node_metrics(ev: Evaluator, node: Sequence[int]) -> dict[str, float]:
    """Every metric of ``node`` (the generalization with its required suppression)."""
    node = tuple(int(x) for x in node)
    bottom = ev.bottom
    codes = np.column_stack([
        bottom.codes[:, j] if node[j] == 0 else ev.rollup(j, 0, node[j])[bottom.codes[:, j]]
        for j in range(len(node))
    ]) if node else bottom.codes
    cls, sizes, violating = ev.class_stats(GroupTable(node, codes, bottom.sens, bottom.counts, grouped=False))
    bad_class = violating.any(axis=1)
    n = int(bottom.counts.sum())
    s = int(sizes[bad_class].sum())
    kept = sizes[~bad_class]
    heights = ev.enc.heights.astype(float)
    ratio = np.divide(np.asarray(node, float), heights, out=np.zeros(len(node)), where=heights > 0)
    loss = ((n - s) * (ratio.mean() if len(node) else 0.0) + s) / n
    row_suppressed = bad_class[cls]
    entropy = 0.0
    w = bottom.counts.astype(float)
    for j in range(len(node)):
        c0 = np.bincount(bottom.codes[:, j], weights=w)
        cg = np.bincount(codes[:, j], weights=w)
        per_row = np.where(row_suppressed, np.log2(n / c0[bottom.codes[:, j]]),
                           np.log2(cg[codes[:, j]] / c0[bottom.codes[:, j]]))
        entropy += float((w * per_row).sum())
    return {
        "loss": float(loss),
        "discernibility": float((kept.astype(float) ** 2).sum() + s * n),
        "aecs": float((n - s) / len(kept)) if len(kept) else float("inf"),
        "entropy": entropy,
        "suppressed": s,
        "classes": int(len(kept)),
    }
