"""ARX's information-loss metrics of a full-domain generalization with tuple suppression, by
ARX's names (ARX 3.9, ``org.deidentifier.arx.metric.v2``, each with the defaults of ARX's
``Metric.create...Metric()``; Prasser et al., "Flexible data anonymization using ARX", 2016).

``n`` records, ``d`` quasi-identifiers, ``S`` records suppressed (those of the classes that
violate a criterion), a node's level ``l_j`` of hierarchy ``j`` of height ``h_j``:

* ``"loss"`` — ARX's *Loss* (``MetricMDNMLoss``, ARX's default metric; Iyengar 2002's LM as in
  Bild, Kuhn & Prasser 2018, section 5.1): a released cell generalized to value ``g`` loses the
  share of the hierarchy's original values under ``g`` (``leaves(g) / D_j``, ``D_j`` the rows
  of hierarchy ``j``, the values in the data or not), a suppressed cell loses 1. Per attribute
  ``a_j`` = the sum over the records, normalized to ``(a_j - n/D_j) / (n - n/D_j)`` (0 when
  nothing is generalized); the attributes aggregate by ARX's default, the geometric mean
  ``prod(1 + a_j) ** (1/d) - 1``. Generalization and suppression weigh equally (gsFactor 0.5).
  The shares are those of a hierarchy given as a table (ARX's ``DomainShareMaterialized``, as
  for hierarchies read from CSV); ARX's interval and redaction builders use other shares.
* ``"precision"`` — ARX's *Precision* (``MetricMDNMPrecision``; Sweeney 2002's Prec): a released
  cell loses ``l_j / h_j``, a suppressed one 1; per attribute ``((n - S) l_j / h_j + S) / n``,
  the attributes' arithmetic mean. (This was sdckit's ``"loss"`` before issue 28.)
* ``"height"`` — ARX's *Height* (``MetricMDHeight``): ``sum l_j``; suppression costs nothing.
* ``"discernibility"`` — ARX's *Discernibility* (``MetricSDNMDiscernability``; Bayardo &
  Agrawal 2005): ``sum |E|^2`` over the released classes plus ``n`` per suppressed record.
* ``"aecs"`` — ARX's *Average equivalence class size* (``MetricSDAECS``; LeFevre et al. 2006):
  ``n / (released classes + 1 if any record is suppressed)`` — the suppressed records count as
  one more class.
* ``"entropy"`` — ARX's *Non-uniform entropy* (``MetricMDNUNMEntropy``; Gionis & Tassa 2009),
  summed over the attributes: per attribute, ``sum log2(count(g) / count(v))`` over all the
  records (``v`` a record's value, ``g`` its generalization, counts in the input table;
  suppressed records included) plus, for the suppressed records,
  ``sum_g S_g log2(S / S_g)`` (``S_g`` of them with generalized value ``g``).

Lower is better for all. As ARX does, the per-attribute values of loss and entropy are
rounded down to 1e-10 before they are aggregated.

Monotonicity (ARX's ``isMonotonic``): with no suppression allowed every metric only grows when
a node is generalized, so the optimum is a k-minimal node; with suppression only ``height``
does (less suppression higher up can more than pay for the coarser values), and the search
must score every satisfying node (:mod:`.search`). :meth:`Scorer.bounds` gives each node a
lower bound from its levels alone (loss, precision, height, entropy), with which the search
skips nodes soundly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sdckit.anonymity.lattice import Encoded, Evaluator
from sdckit.core.errors import ParameterError
from sdckit.utility.precision import discernibility_from_sizes

METRICS = ("loss", "precision", "height", "discernibility", "aecs", "entropy")
#: ARX's default metric (``ARXConfiguration``'s ``Metric.createLossMetric()``).
DEFAULT_METRIC = "loss"

_ROUND = 1e10  # ARX rounds per-attribute loss and entropy down to 10 decimals


def check_metric(metric: str, where: str) -> str:
    """``metric`` if it is one of :data:`METRICS`, else a :class:`ParameterError` naming ``where``."""
    if metric not in METRICS:
        raise ParameterError(f"The 'metric' parameter of {where} must be one of {METRICS}. Got {metric!r} instead.")
    return metric


def is_monotone(metric: str, allowed: int) -> bool:
    """Whether ``metric`` can only grow from a node to the nodes above it (ARX: every metric
    when no record may be suppressed, ``height`` always)."""
    return metric == "height" or allowed == 0


def _floor(value: float) -> float:
    return float(np.floor(value * _ROUND) / _ROUND)


@dataclass(frozen=True)
class NodeClasses:
    """A node's frequency table with what is released: ``codes`` (quasi-identifiers x rows) and
    ``counts`` of its rows, ``kept`` (the row's class is released), the released classes'
    ``sizes`` and the records ``suppressed``."""

    node: tuple[int, ...]
    codes: np.ndarray
    counts: np.ndarray
    kept: np.ndarray
    sizes: np.ndarray
    suppressed: int


def node_classes(ev: Evaluator, node: Sequence[int]) -> NodeClasses:
    """The classes of ``node`` (exact, whatever the search's early exits), from its frequency
    table rolled up from the finest cached one."""
    node = tuple(int(x) for x in node)
    table = ev.table(node)
    cls, sizes, violating = ev.class_stats(table)
    bad = violating.any(axis=1)
    return NodeClasses(node, table.quasi, table.counts, ~bad[cls], sizes[~bad], int(sizes[bad].sum()))


class Scorer:
    """The metrics of nodes of one encoded table: the constants they need (record count,
    heights, domain sizes, leaf shares and generalization entropy per attribute and level)
    are computed once."""

    def __init__(self, enc: Encoded):
        self.n = enc.n
        self.heights = [int(h.height) for h in enc.hierarchies]
        self.domain = [len(h.values) for h in enc.hierarchies]
        self.share: list[list[np.ndarray]] = []  # [j][l][code]: leaves under the code / D_j
        self.general: list[np.ndarray] = []  # [j][l]: sum over the records of their cell's share
        self.entropy: list[np.ndarray] = []  # [j][l]: sum over the records of log2(count(g) / count(v))
        w = enc.bottom.counts.astype(float)
        for j, h in enumerate(enc.hierarchies):
            c0 = np.bincount(enc.bottom.columns[j], weights=w, minlength=len(h.values))
            present = c0 > 0
            shares, general, entropy = [], [], []
            for level in range(h.levels):
                codes = h.codes(level)
                shares.append(h.leaves(level) / self.domain[j])
                general.append(float((c0 * shares[-1][codes]).sum()))
                cl = np.bincount(codes, weights=c0, minlength=len(h.labels(level)))
                entropy.append(float((c0[present] * np.log2(cl[codes][present] / c0[present])).sum()))
            self.share.append(shares)
            self.general.append(np.array(general))
            self.entropy.append(np.array(entropy))

    # ------------------------------------------------------------- aggregates
    def _loss_of(self, per_attribute: Sequence[float]) -> float:
        d = len(per_attribute)
        if not d:
            return 0.0
        out = 1.0
        for j, a in enumerate(per_attribute):
            lowest = self.n / self.domain[j]
            v = (a - lowest) / (self.n - lowest) if self.domain[j] > 1 else 0.0
            out *= (_floor(max(v, 0.0)) + 1.0) ** (1.0 / d)
        return out - 1.0

    def _precision_of(self, node: Sequence[int], suppressed: int) -> float:
        d, n, total = len(node), self.n, 0.0
        for level, h in zip(node, self.heights):
            ratio = level / h if h else 0.0
            total += (((n - suppressed) * ratio + suppressed) / n) / d
        return total

    def bounds(self, nodes: np.ndarray, metric: str) -> np.ndarray | None:
        """A lower bound of ``metric`` at each of ``nodes`` (rows of levels) from the levels
        alone, whatever is suppressed there (a suppressed cell costs at least what generalizing
        it costs: the score with nothing suppressed); None for ``discernibility`` and ``aecs``,
        which need the classes. Computed in bulk, so it may differ from the score in the last
        bits (the search allows a margin)."""
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1, len(self.heights))
        d = nodes.shape[1]
        if metric not in ("height", "precision", "loss", "entropy"):
            return None
        if metric == "height" or not d:
            return nodes.sum(axis=1).astype(float) if metric == "height" else np.zeros(len(nodes))
        columns = range(d)
        if metric == "precision":
            h = np.maximum(np.array(self.heights, dtype=float), 1)
            return (nodes / h).mean(axis=1)
        if metric == "entropy":
            per = np.column_stack([np.floor(self.entropy[j][nodes[:, j]] * _ROUND) / _ROUND for j in columns])
            return per.sum(axis=1)
        per = []
        for j in columns:
            lowest = self.n / self.domain[j]
            spread = self.n - lowest
            v = (self.general[j][nodes[:, j]] - lowest) / spread if self.domain[j] > 1 else np.zeros(len(nodes))
            per.append(np.floor(np.maximum(v, 0.0) * _ROUND) / _ROUND)
        return np.prod(np.column_stack(per) + 1.0, axis=1) ** (1.0 / d) - 1.0

    # ------------------------------------------------------------- values
    def value(self, c: NodeClasses, metric: str) -> float:
        """``metric`` of the node whose classes are ``c`` (lower is better)."""
        node, s, n = c.node, c.suppressed, self.n
        if metric == "height":
            return float(sum(node))
        if metric == "precision":
            return self._precision_of(node, s)
        if metric == "discernibility":
            return float(discernibility_from_sizes(c.sizes, s, n))
        if metric == "aecs":
            groups = len(c.sizes) + (1 if s else 0)
            return n / groups if groups else float("inf")
        kept_counts = c.counts[c.kept].astype(float)
        if metric == "loss":
            return self._loss_of([float((kept_counts * self.share[j][level][c.codes[j][c.kept]]).sum()) + s
                                  for j, level in enumerate(node)])
        if metric == "entropy":
            total = 0.0
            gone = ~c.kept
            for j, level in enumerate(node):
                value = self.entropy[j][level]
                if s:
                    sg = np.bincount(c.codes[j][gone], weights=c.counts[gone].astype(float))
                    sg = sg[sg > 0]
                    value += float((sg * np.log2(s / sg)).sum())
                total += _floor(value)
            return total
        raise ParameterError(f"The 'metric' parameter must be one of {METRICS}. Got {metric!r} instead.")

    def values(self, c: NodeClasses) -> dict[str, float]:
        """Every metric of the node, with ``suppressed`` and ``classes`` (released)."""
        return {**{m: self.value(c, m) for m in METRICS}, "suppressed": c.suppressed, "classes": int(len(c.sizes))}


def node_metrics(ev: Evaluator, node: Sequence[int], scorer: Scorer | None = None) -> dict[str, float]:
    """Every metric of ``node`` (the generalization with its required suppression)."""
    return (scorer or Scorer(ev.enc)).values(node_classes(ev, node))
