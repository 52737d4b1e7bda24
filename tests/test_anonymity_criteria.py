"""l-diversity, t-closeness and the checker on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdckit import DataError, ParameterError
from sdckit.anonymity import (
    DistinctLDiversity,
    EntropyLDiversity,
    Hierarchy,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    check,
)


def two_classes():
    # class A = zip 1: flu, flu, cancer, asthma; class B = zip 2: flu, flu, flu, none
    return pd.DataFrame({
        "zip": ["1"] * 4 + ["2"] * 4,
        "disease": ["flu", "flu", "cancer", "asthma", "flu", "flu", "flu", "none"],
    })


def measures(criterion):
    report = check(two_classes(), ["zip"], [criterion])
    return report.classes[criterion.label()].tolist(), report.classes[f"{criterion.label()} violated"].tolist()


def test_distinct_l_diversity():
    assert measures(DistinctLDiversity(3, "disease")) == ([3.0, 2.0], [False, True])


def test_entropy_l_diversity():
    # A: p = 1/2, 1/4, 1/4 -> H = 1.5 bits -> exp(H) = 2^1.5 = 2.828
    # B: p = 3/4, 1/4 -> H = -(.75 ln .75 + .25 ln .25) = 0.5623 nats -> exp = 1.7548
    values, bad = measures(EntropyLDiversity(2.0, "disease"))
    assert values == pytest.approx([2 ** 1.5, math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))])
    assert bad == [False, True]


def test_recursive_cl_diversity():
    # A: counts 2,1,1 -> r1 / (r2 + r3) = 2 / 2 = 1; B: counts 3,1 -> 3 / 1 = 3
    values, bad = measures(RecursiveCLDiversity(2.0, 2, "disease"))
    assert values == [1.0, 3.0] and bad == [False, True]
    assert measures(RecursiveCLDiversity(1.0, 2, "disease"))[1] == [True, True]  # 1 < 1 fails
    assert measures(RecursiveCLDiversity(9.0, 3, "disease"))[0] == [2.0, math.inf]  # B has 2 values


def test_t_closeness_equal_and_ordered():
    # whole table, values in order asthma, cancer, flu, none: q = 1/8, 1/8, 5/8, 1/8
    # A: p = 1/4, 1/4, 1/2, 0 -> r = 1/8, 1/8, -1/8, -1/8 -> equal EMD = |r|/2 = 1/4;
    #    ordered: cumulative 1/8, 2/8, 1/8, 0 -> (4/8) / (m-1 = 3) = 1/6. B is the mirror image.
    values, bad = measures(TCloseness(0.2, "disease"))
    assert values == pytest.approx([0.25, 0.25]) and bad == [True, True]
    values, bad = measures(TCloseness(0.2, "disease", distance="ordered"))
    assert values == pytest.approx([1 / 6, 1 / 6]) and bad == [False, False]


def test_t_closeness_hierarchical():
    # asthma, flu -> respiratory; cancer -> tumour; none -> healthy; then * (height 2).
    # A: r = asthma +1/8, cancer +1/8, flu -1/8, none -1/8.
    # respiratory: pos 1/8, neg 1/8 -> cost 1/2 * 1/8; its extra 0. tumour extra +1/8,
    # healthy -1/8 -> root: min(1/8, 1/8) * 2/2. EMD = 1/16 + 1/8 = 3/16.
    h = Hierarchy.groups({"asthma": "respiratory", "flu": "respiratory", "cancer": "tumour", "none": "healthy"})
    values, _ = measures(TCloseness(0.2, "disease", distance="hierarchical", hierarchy=h))
    assert values == pytest.approx([3 / 16, 3 / 16])


def test_checker_report_and_summary():
    report = check(two_classes(), ["zip"], [KAnonymity(5), DistinctLDiversity(2, "disease")])
    assert not report.satisfied
    assert report.summary[0] == {"criterion": "k-anonymity (k=5)", "satisfied": False, "violating_classes": 2,
                                 "violating_records": 8, "worst": 4.0}
    assert report.summary[1]["satisfied"] is True
    assert len(report.violations) == 2
    d = report.to_dict()
    assert d["classes"] == 2 and d["records"] == 8 and d["violating_classes"][0]["zip"] == "1"


def test_criterion_parameters_are_validated():
    with pytest.raises(ParameterError, match="The 'k' parameter of KAnonymity must be an int >= 2. Got 1 instead."):
        KAnonymity(1)
    with pytest.raises(ParameterError, match="'l' parameter of DistinctLDiversity"):
        DistinctLDiversity(1, "s")
    with pytest.raises(ParameterError, match="'sensitive' parameter of EntropyLDiversity"):
        EntropyLDiversity(2.0, "")
    with pytest.raises(ParameterError, match="'c' parameter of RecursiveCLDiversity"):
        RecursiveCLDiversity(0.0, 2, "s")
    with pytest.raises(ParameterError, match="'t' parameter of TCloseness"):
        TCloseness(1.5, "s")
    with pytest.raises(ParameterError, match="'distance' parameter of TCloseness"):
        TCloseness(0.2, "s", distance="manhattan")
    with pytest.raises(ParameterError, match="'hierarchy' parameter of TCloseness"):
        TCloseness(0.2, "s", distance="hierarchical")


def test_checker_bad_inputs():
    frame = two_classes()
    with pytest.raises(DataError, match="'nope' is not in the data"):
        check(frame, ["nope"], [KAnonymity(2)])
    with pytest.raises(DataError, match="'illness' is not in the data"):
        check(frame, ["zip"], [DistinctLDiversity(2, "illness")])
    with pytest.raises(ParameterError, match="'criteria' parameter of check"):
        check(frame, ["zip"], [])
    with pytest.raises(ParameterError, match="'quasi' parameter of check"):
        check(frame, [], [KAnonymity(2)])
    with pytest.raises(DataError, match="empty"):
        check(frame.iloc[:0], ["zip"], [KAnonymity(2)])
    with pytest.raises(DataError, match="missing at row 3"):
        check(frame.assign(disease=frame["disease"].where(frame.index != 3)), ["zip"], [DistinctLDiversity(2, "disease")])


def test_monotonicity_declarations_hold_on_random_merges():
    # Distinct l-diversity and k-anonymity are monotone with suppression: merging two classes
    # never suppresses more records than the two cost apart.
    rng = np.random.default_rng(5)
    for crit in (KAnonymity(3), DistinctLDiversity(2, "s")):
        assert crit.monotone
        for _ in range(200):
            a, b = rng.integers(0, 3, (2, 3))
            sizes = np.array([a.sum(), b.sum(), a.sum() + b.sum()])
            hist = np.array([a, b, a + b])
            keep = sizes > 0
            bad = crit.violates(sizes[keep], hist[keep])
            cost = (sizes[keep] * bad)
            if keep.all():
                assert cost[2] <= cost[0] + cost[1]


def test_t_closeness_hierarchy_from_a_csv_path(tmp_path):
    path = tmp_path / "disease.csv"
    path.write_text("asthma;respiratory;*\nflu;respiratory;*\ncancer;tumour;*\nnone;healthy;*\n")
    crit = TCloseness(0.2, "disease", distance="hierarchical", hierarchy=str(path))
    assert isinstance(crit.hierarchy, Hierarchy)
    assert measures(crit)[0] == pytest.approx([3 / 16, 3 / 16])
