"""Issue 28 item 3: ARX's metrics by ARX's names (loss, precision, height, discernibility, aecs,
entropy), each choosing ARX's optimum — the satisfying node with the best score, which with
suppression need not be k-minimal.

The expected values are worked by hand from ARX's definitions (ARX 3.9,
``org.deidentifier.arx.metric.v2``: MetricMDNMLoss with its default geometric mean,
MetricMDNMPrecision, MetricMDHeight, MetricSDNMDiscernability, MetricSDAECS,
MetricMDNUNMEntropy), or, on Adult, by a brute-force oracle over the whole lattice written here
independently of sdckit's metrics. ARX itself cannot run here (no Java/Maven): the one answer
known from ARX is Loss at 5% on Adult, [0, 3, 0, 0, 2, 1, 1, 0] (issue 28).
"""

from __future__ import annotations

import itertools
from math import log2, sqrt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit import ParameterError
from sdckit.anonymity import FullDomainGeneralization, Hierarchy, search_frequencies
from sdckit.anonymity.frequencies import evaluator_for
from sdckit.anonymity.lattice import encode
from sdckit.anonymity.metrics import METRICS, node_metrics

ADULT = Path(__file__).parent / "data" / "adult"
QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


# ----------------------------------------------------------------------------- by hand
def small():
    """Eight records; a: a1, a2 -> A; a3, a4, a5 -> B; -> * (5 values, height 2);
    b: b1, b2 -> * (2 values, height 1)."""
    a = ["a2", "a3", "a3", "a4", "a4", "a4", "a5", "a5"]
    b = ["b2", "b1", "b1", "b1", "b1", "b1", "b1", "b2"]
    h = {"a": Hierarchy([["a1", "A", "*"], ["a2", "A", "*"], ["a3", "B", "*"], ["a4", "B", "*"], ["a5", "B", "*"]]),
         "b": Hierarchy([["b1", "*"], ["b2", "*"]])}
    return pd.DataFrame({"a": a, "b": b}), h


# k = 2, at most 2 of the n = 8 records suppressed. The classes of each node:
#   (0,0): a2b2 1, a3b1 2, a4b1 3, a5b1 1, a5b2 1  -> 3 records in small classes: fails
#   (1,0): Ab2 1, Bb1 6, Bb2 1                     -> S = 2 (a2b2, a5b2), released [6]
#   (2,0): *b1 6, *b2 2                            -> S = 0, released [6, 2]
#   (0,1): a2* 1, a3* 2, a4* 3, a5* 2              -> S = 1 (a2b2), released [2, 3, 2]
#   (1,1): A* 1, B* 7                              -> S = 1 (a2b2), released [7]
#   (2,1): ** 8                                    -> S = 0, released [8]
#
# loss: a's shares are 1/5 (level 0), A 2/5, B 3/5 (level 1), 1 (top); its lowest sum is
# n/5 = 1.6, so a_a = (sum - 1.6) / 6.4; b's shares 1/2, 1: a_b = (sum - 4) / 4. A suppressed
# cell costs 1. Aggregate sqrt((1 + a_a)(1 + a_b)) - 1.
#   (1,0): a: 6 * 3/5 + 2 = 5.6 -> 0.625;  b: 6 * 1/2 + 2 = 5 -> 0.25
#   (2,0): a: 8 -> 1;                      b: 8 * 1/2 = 4 -> 0
#   (0,1): a: 7 * 1/5 + 1 = 2.4 -> 0.125;  b: 8 -> 1
#   (1,1): a: 7 * 3/5 + 1 = 5.2 -> 0.5625; b: 8 -> 1
#   (2,1): 1 and 1
# precision: mean over a, b of ((n - S) l/h + S) / n.
# entropy: counts a2 1, a3 2, a4 3, a5 2; A 1, B 7; b1 6, b2 2. Generalization part over all
# 8 records, plus per attribute sum_g S_g log2(S / S_g) over the suppressed records.
#   (1,0): suppressed a2b2 -> (A, b2), a5b2 -> (B, b2): a: 1 log2 2 + 1 log2 2 = 2; b: 2 log2 1 = 0
#   (0,1), (1,1): one suppressed record: 1 log2 1 = 0
ENT_A1 = 1 * log2(1 / 1) + 2 * log2(7 / 2) + 3 * log2(7 / 3) + 2 * log2(7 / 2)
ENT_A2 = 1 * log2(8 / 1) + 2 * log2(8 / 2) + 3 * log2(8 / 3) + 2 * log2(8 / 2)
ENT_B1 = 6 * log2(8 / 6) + 2 * log2(8 / 2)
BY_HAND = {
    (1, 0): dict(loss=sqrt(1.625 * 1.25) - 1, precision=((6 * 1 / 2 + 2) / 8 + 2 / 8) / 2, height=1,
                 discernibility=6**2 + 2 * 8, aecs=8 / (1 + 1), entropy=ENT_A1 + 2, suppressed=2, classes=1),
    (2, 0): dict(loss=sqrt(2 * 1) - 1, precision=(1 + 0) / 2, height=2,
                 discernibility=6**2 + 2**2, aecs=8 / 2, entropy=ENT_A2, suppressed=0, classes=2),
    (0, 1): dict(loss=sqrt(1.125 * 2) - 1, precision=(1 / 8 + 1) / 2, height=1,
                 discernibility=2**2 + 3**2 + 2**2 + 8, aecs=8 / (3 + 1), entropy=ENT_B1, suppressed=1, classes=3),
    (1, 1): dict(loss=sqrt(1.5625 * 2) - 1, precision=((7 / 2 + 1) / 8 + 1) / 2, height=2,
                 discernibility=7**2 + 8, aecs=8 / (1 + 1), entropy=ENT_A1 + ENT_B1, suppressed=1, classes=1),
    (2, 1): dict(loss=1.0, precision=1.0, height=3, discernibility=8**2, aecs=8 / 1, entropy=ENT_A2 + ENT_B1,
                 suppressed=0, classes=1),
}
# The best of each column: loss (2,0) 0.4142 < (1,0) 0.4252 — not k-minimal, (1,0) is below it;
# precision (1,0) 0.4375 < (2,0) 0.5; height (0,1) and (1,0) tie at 1, the lower lexicographic
# wins; discernibility (0,1) 25; aecs (0,1) 2; entropy (0,1) 6.49.
CHOSEN = {"loss": (2, 0), "precision": (1, 0), "height": (0, 1), "discernibility": (0, 1), "aecs": (0, 1),
          "entropy": (0, 1)}


@pytest.mark.parametrize("node", sorted(BY_HAND))
def test_every_metric_of_every_satisfying_node_by_hand(node):
    frame, h = small()
    ev = evaluator_for(encode(frame, h, ()), 2, (), 2)
    assert node_metrics(ev, node) == pytest.approx(BY_HAND[node], rel=1e-9)


@pytest.mark.parametrize("algorithm", ["optimal", "exhaustive"])
@pytest.mark.parametrize("metric", METRICS)
def test_each_metric_chooses_its_optimum_by_hand(metric, algorithm):
    frame, h = small()
    method = FullDomainGeneralization(2, h, max_suppression=2 / 8, metric=metric, algorithm=algorithm)
    part = method.partition(frame)
    node = CHOSEN[metric]
    assert tuple(part.info["node"].values()) == node
    assert part.info["metric"] == metric
    assert part.info["metric_value"] == pytest.approx(BY_HAND[node][metric], rel=1e-9)
    assert part.info["metrics"] == pytest.approx({m: BY_HAND[node][m] for m in METRICS}, rel=1e-9)
    assert sorted(map(tuple, part.info["k_minimal_nodes"])) == [(0, 1), (1, 0)]


def test_default_is_arx_loss():
    frame, h = small()
    assert FullDomainGeneralization(2, h).metric == "loss"
    assert FullDomainGeneralization(2, h, max_suppression=2 / 8).search(frame).node == CHOSEN["loss"]


def test_unknown_metric_names_are_refused():
    frame, h = small()
    with pytest.raises(ParameterError, match="'metric'"):
        FullDomainGeneralization(2, h, metric="Loss")
    codes = np.column_stack([h[q].index_of(frame[q], q) for q in h])
    with pytest.raises(ParameterError, match="'metric' parameter of search_frequencies"):
        search_frequencies(codes, np.ones(len(frame), dtype=np.int64), h, 2, metric="dm")


# ----------------------------------------------------------------------------- Adult
# The optimum of each metric on Adult (8 quasi-identifiers, ARX's hierarchies, k = 5). Loss at
# 5% is ARX's published answer; every entry is what the brute-force oracle below finds (the
# slow test re-derives them). Where several nodes tie (height; aecs at 0%), ARX takes the
# lowest height and then the first its traversal meets, which only ARX can tell: the tie sets
# are listed, and sdckit takes the lexicographically first.
ADULT_OPTIMA = {
    ("loss", 0.0): [0, 4, 1, 2, 3, 2, 0, 0],
    ("precision", 0.0): [0, 4, 1, 2, 3, 2, 0, 0],
    ("height", 0.0): [0, 1, 1, 2, 3, 2, 2, 1],
    ("discernibility", 0.0): [1, 1, 1, 1, 3, 2, 2, 1],
    ("aecs", 0.0): [0, 4, 1, 2, 0, 2, 2, 1],
    ("entropy", 0.0): [1, 1, 1, 1, 3, 2, 2, 1],
    ("loss", 0.05): [0, 3, 0, 0, 2, 1, 1, 0],  # ARX 3.9's answer (issue 28)
    ("precision", 0.05): [0, 4, 0, 0, 2, 1, 0, 0],  # sdckit's old "loss"
    ("height", 0.05): [0, 1, 1, 0, 1, 2, 1, 0],
    ("discernibility", 0.05): [0, 0, 1, 2, 3, 2, 2, 0],
    ("aecs", 0.05): [1, 0, 1, 2, 0, 2, 2, 0],
    ("entropy", 0.05): [0, 0, 1, 1, 2, 2, 2, 0],
}
ADULT_TIES = {
    ("height", 0.0): 8,
    ("aecs", 0.0): 2,
    ("height", 0.05): 2,
}


@pytest.fixture(scope="module")
def adult():
    frame = pd.read_csv(ADULT / "adult.csv.gz", sep=";")
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
    return frame, hierarchies


@pytest.mark.parametrize("metric, sup", sorted(ADULT_OPTIMA))
def test_adult_optimum_of_each_metric(adult, metric, sup):
    frame, h = adult
    result = FullDomainGeneralization(5, h, max_suppression=sup, metric=metric).search(frame)
    assert list(result.node) == ADULT_OPTIMA[metric, sup]


def arx_oracle(frame, hierarchies, k, sup):
    """Every node of the lattice scored by ARX's formulas, computed on the records' distinct
    rows with pandas/numpy alone: {node: {metric: value}} for the satisfying nodes."""
    quasi = list(hierarchies)
    n = len(frame)
    allowed = int(np.floor(sup * n + 1e-9))
    tables = {q: hierarchies[q].table().to_numpy() for q in quasi}
    rows = frame[quasi].astype(str).value_counts().reset_index()
    w = rows["count"].to_numpy().astype(float)
    labels, share = {}, {}
    for j, q in enumerate(quasi):
        t = tables[q]
        where = pd.Index(t[:, 0]).get_indexer(rows[q])
        for level in range(t.shape[1]):
            codes, _ = pd.factorize(t[:, level])
            labels[j, level] = codes[where]
            share[j, level] = np.bincount(codes)[codes[where]] / len(t)
    heights = [tables[q].shape[1] - 1 for q in quasi]
    d = len(quasi)
    out = {}
    for node in itertools.product(*[range(hh + 1) for hh in heights]):
        key = np.zeros(len(w), dtype=np.int64)
        for j, level in enumerate(node):
            key = key * (labels[j, level].max() + 1) + labels[j, level]
        _, cls = np.unique(key, return_inverse=True)
        sizes = np.bincount(cls, weights=w)
        small_ = sizes < k
        s = int(sizes[small_].sum())
        if s > allowed:
            continue
        kept = ~small_[cls]
        loss = 1.0
        for j, level in enumerate(node):
            lowest = n / len(tables[quasi[j]])
            total = float((w[kept] * share[j, level][kept]).sum()) + s
            loss *= (1 + max(0.0, (total - lowest) / (n - lowest))) ** (1 / d)
        entropy = 0.0
        for j, level in enumerate(node):
            c0 = np.bincount(labels[j, 0], weights=w)
            cl = np.bincount(labels[j, level], weights=w)
            entropy += float((w * np.log2(cl[labels[j, level]] / c0[labels[j, 0]])).sum())
            if s:
                sg = np.bincount(labels[j, level][~kept], weights=w[~kept])
                sg = sg[sg > 0]
                entropy += float((sg * np.log2(s / sg)).sum())
        out[node] = {
            "loss": loss - 1,
            "precision": sum(((n - s) * level / hh + s) / n for level, hh in zip(node, heights)) / d,
            "height": sum(node),
            "discernibility": float((sizes[~small_] ** 2).sum()) + n * s,
            "aecs": n / (int((~small_).sum()) + (1 if s else 0)),
            "entropy": entropy,
        }
    return out


@pytest.mark.slow
@pytest.mark.parametrize("sup", [0.0, 0.05])
def test_adult_optima_against_the_brute_force_oracle(adult, sup):
    # about 2 s (0%) and 6 s (5%) of oracle, then the twelve searches
    frame, h = adult
    scores = arx_oracle(frame, h, 5, sup)
    for metric in METRICS:
        best = min(scores[v][metric] for v in scores)
        ties = sorted((v for v in scores if abs(scores[v][metric] - best) <= 1e-9 * max(1.0, abs(best))),
                      key=lambda v: (sum(v), v))
        assert len(ties) == ADULT_TIES.get((metric, sup), 1), metric
        assert list(ties[0]) == ADULT_OPTIMA[metric, sup], metric
        result = FullDomainGeneralization(5, h, max_suppression=sup, metric=metric).search(frame)
        assert list(result.node) == list(ties[0]), metric
        assert result.metrics[metric] == pytest.approx(best, rel=1e-9), metric
