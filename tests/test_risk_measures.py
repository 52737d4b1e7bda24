"""Risk measures of issue 16: frequencies with weights, Benedetti-Franconi individual risk,
global and household risk, k-anonymity violations and SUDA2.

Oracles: hand-worked examples computed from the published formulas (written out below),
sdcMicro's own published test expectations (tests/testthat/test_freqCalc.R and
test_indivRisk.R of sdcTools/sdcMicro; the SDC practice guide example of test_suda2.R), and
brute force on small random data (pairwise matching, every subset of keys for SUDA).
"""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.risk import frequencies, global_risk, individual_risk, k_anonymity_violations, suda2

DATA = Path(__file__).parent / "data" / "sdcmicro"
log = math.log


# ------------------------------------------------------------- a 10-record file, by hand
def ten_records(missing_last: bool = False) -> pd.DataFrame:
    region = ["N", "N", "N", "S", "S", "N", "S", "E", "E", "E"]
    if missing_last:
        region[9] = None
    return pd.DataFrame({
        "sex": ["F", "F", "F", "F", "F", "M", "M", "M", "M", "M"],
        "region": region,
        "w": [10.0, 20.0, 30.0, 40.0, 60.0, 50.0, 1.0, 25.0, 25.0, 25.0],
    })


def bf2(p):  # Benedetti-Franconi, f = 2
    odds = p / (1 - p)
    return odds - odds**2 * log(1 / p)


def bf1(p):  # f = 1
    return p / (1 - p) * log(1 / p)


def test_ten_records_by_hand():
    out = individual_risk(ten_records(), ["sex", "region"], "w")
    assert out["fk"].tolist() == [3, 3, 3, 2, 2, 1, 1, 3, 3, 3]
    assert out["Fk"].tolist() == [60, 60, 60, 100, 100, 50, 1, 75, 75, 75]
    # f > 2: p / (f - (1 - p)); (F,N): p = 3/60; (M,E): p = 3/75
    fn, fs, mn, ms, me = 0.05 / (3 - 0.95), bf2(0.02), bf1(1 / 50), 1.0, 0.04 / (3 - 0.96)
    expected = [fn, fn, fn, fs, fs, mn, ms, me, me, me]
    np.testing.assert_allclose(out["risk"], expected, rtol=1e-12)
    # the same numbers written out: 0.05/2.05, 1/49 - (1/49)^2 log 50, (1/49) log 50
    np.testing.assert_allclose([fn, fs, mn], [0.0243902439, 0.0187789, 0.0798372], atol=1e-7)
    g = global_risk(ten_records(), ["sex", "region"], "w", threshold=0.05)
    assert g.expected_reidentifications == pytest.approx(sum(expected))
    assert g.risk == pytest.approx(sum(expected) / 10)
    assert g.above_threshold == 2 and g.share_above_threshold == 0.2  # (M,N) and (M,S)
    assert g.to_dict()["records"] == 10


def test_ten_records_missing_rules():
    f = ten_records(missing_last=True)
    wild = frequencies(f, ["sex", "region"], "w")
    # record 10 (M, missing) matches every M record; each M record matches it as well
    assert wild["fk"].tolist() == [3, 3, 3, 2, 2, 2, 2, 3, 3, 5]
    assert wild["Fk"].tolist() == [60, 60, 60, 100, 100, 75, 26, 75, 75, 126]
    cat = frequencies(f, ["sex", "region"], "w", missing="category")
    assert cat["fk"].tolist() == [3, 3, 3, 2, 2, 1, 1, 2, 2, 1]
    assert cat["Fk"].tolist() == [60, 60, 60, 100, 100, 50, 1, 50, 50, 25]
    assert k_anonymity_violations(ten_records(), ["sex", "region"], 3) == 4
    assert k_anonymity_violations(f, ["sex", "region"], 3) == 4
    assert k_anonymity_violations(f, ["sex", "region"], 3, missing="category") == 7


def test_without_weights_risk_is_one_over_fk():
    out = individual_risk(ten_records(), ["sex", "region"])
    assert (out["Fk"] == out["fk"]).all()
    np.testing.assert_allclose(out["risk"], 1 / out["fk"])


def test_household_risk_by_hand():
    f = ten_records().assign(hh=[1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    g = global_risk(f, ["sex", "region"], "w", household="hh")
    r = individual_risk(f, ["sex", "region"], "w")["risk"].to_numpy()
    hh = [1 - (1 - r[i]) * (1 - r[i + 1]) for i in range(0, 10, 2)]
    assert g.individual["household_risk"].tolist() == pytest.approx(np.repeat(hh, 2))
    assert g.household_expected_reidentifications == pytest.approx(2 * sum(hh))
    assert g.household_risk == pytest.approx(2 * sum(hh) / 10)
    assert g.individual.loc[6, "household_risk"] == 1.0  # a member at risk 1


def test_strata_compute_within_each_stratum():
    f = ten_records().assign(st=[1, 2, 1, 2, 1, 2, 1, 2, 1, 2])
    out = frequencies(f, ["sex"], "w", strata=["st"])
    for s in (1, 2):
        part = f[f["st"] == s]
        np.testing.assert_array_equal(out.loc[part.index, "fk"], frequencies(part, ["sex"], "w")["fk"])
        np.testing.assert_allclose(out.loc[part.index, "Fk"], frequencies(part, ["sex"], "w")["Fk"])


# ------------------------------------------------------------- sdcMicro's published numbers
def sdcmicro_sample(with_na: bool, a_last_na: bool = False) -> pd.DataFrame:
    """The 8-record example of sdcMicro's test_freqCalc.R / test_indivRisk.R (the latter's
    example with missing values also lacks the last record's A)."""
    a = [2, 3, 2, 2, 3, 3, 1, np.nan if a_last_na else 2]
    c = [1, 3, 1, 2, 1, 1, 1, 1]
    if with_na:
        c = [1, 3, np.nan, 2, 1, 1, np.nan, 1]
    return pd.DataFrame({"A": a, "B": [3, 3, 3, 3, 3, 3, 4, 3], "C": c,
                         "weight": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]})


def test_sdcmicro_freqcalc_published():
    fr = frequencies(sdcmicro_sample(False), ["A", "B", "C"], "weight")
    assert fr["Fk"].tolist() == [108.0, 45.5, 108.0, 17.0, 100.0, 100.0, 123.5, 108.0]
    assert fr["fk"].tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    fr = frequencies(sdcmicro_sample(True), ["A", "B", "C"], "weight")
    assert fr["Fk"].tolist() == [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0]
    assert fr["fk"].tolist() == [3, 1, 4, 2, 2, 2, 1, 3]
    # one column and one row all missing
    f = pd.DataFrame({"A": [2, 3, np.nan, 2, 3, 3, 1, 2], "B": [3, 3, np.nan, 3, 3, 3, 4, 3],
                      "C": [np.nan] * 8, "w": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]})
    fr = frequencies(f, ["A", "B", "C"], "w")
    assert fr["Fk"].tolist() == [125.0, 184.5, 394.0, 125.0, 184.5, 184.5, 162.5, 125.0]
    assert fr["fk"].tolist() == [4, 4, 8, 4, 4, 4, 2, 4]
    # more key variables than records
    f = pd.DataFrame(np.array([2, 3, np.nan, 2, 3, 3, 1, np.nan, 3, 3, np.nan, 3, 3, 2, 2, 3,
                               np.nan, np.nan, 1, 2, np.nan, np.nan, 4, 4]).reshape(8, 3).T,
                     columns=list("ABCDEFGH")).assign(w=[18.0, 45.5, 122])
    fr = frequencies(f, list("ABCDEFGH"), "w")
    assert fr["Fk"].tolist() == [18.0, 167.5, 167.5] and fr["fk"].tolist() == [1, 2, 2]


def test_sdcmicro_indivrisk_published():
    r = individual_risk(sdcmicro_sample(False), ["A", "B", "C"], "weight")["risk"]
    np.testing.assert_allclose(r, [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883,
                                   0.01877883, 0.03931625, 0.01369863], atol=1e-8)
    r = individual_risk(sdcmicro_sample(True, a_last_na=True), ["A", "B", "C"], "weight")["risk"]
    np.testing.assert_allclose(r, [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066,
                                   0.009836066, 0.039316254, 0.005973716], atol=1e-8)


def test_francdat_measure_risk():
    """sdcMicro's example: freqCalc(francdat, keyVars=c(2,4,5,6), w=8); indivRisk."""
    f = pd.read_csv(DATA / "francdat.csv")
    keys = ["Key1", "Key2", "Key3", "Key4"]
    out = individual_risk(f, keys, "w")
    assert out["fk"].tolist() == [2, 2, 2, 1, 1, 1, 1, 2]
    assert out["Fk"].tolist() == [110, 84.5, 84.5, 17, 541, 8, 5, 110]
    expected = [bf2(2 / 110), bf2(2 / 84.5), bf2(2 / 84.5), log(17) / 16, log(541) / 540,
                log(8) / 7, log(5) / 4, bf2(2 / 110)]
    np.testing.assert_allclose(out["risk"], expected, atol=1e-12)
    np.testing.assert_allclose(out["risk"], [0.0171443, 0.0220423, 0.0220423, 0.1770758, 0.0116545,
                                             0.2970631, 0.4023595, 0.0171443], atol=1e-6)
    g = global_risk(f, keys, "w")
    assert g.expected_reidentifications == pytest.approx(sum(expected))
    assert g.risk == pytest.approx(sum(expected) / 8)


# ------------------------------------------------------------- brute force: pairwise matching
def _match(a, b, missing):
    if missing == "wildcard":
        return all(x is None or y is None or x == y for x, y in zip(a, b))
    return tuple(a) == tuple(b)


frames = st.integers(1, 10).flatmap(lambda n: st.integers(1, 4).flatmap(lambda m: st.lists(
    st.lists(st.sampled_from([None, "a", "b", "c"]), min_size=m, max_size=m), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(rows=frames, missing=st.sampled_from(["wildcard", "category"]), data=st.data())
def test_frequencies_equal_pairwise_matching(rows, missing, data):
    m = len(rows[0])
    w = data.draw(st.lists(st.floats(0.5, 100), min_size=len(rows), max_size=len(rows)))
    f = pd.DataFrame(rows, columns=[f"k{j}" for j in range(m)]).assign(w=w)
    out = frequencies(f, [f"k{j}" for j in range(m)], "w", missing)
    for i, a in enumerate(rows):
        hits = [j for j, b in enumerate(rows) if _match(a, b, missing)]
        assert out["fk"].iloc[i] == len(hits)
        assert out["Fk"].iloc[i] == pytest.approx(sum(w[j] for j in hits))


# ------------------------------------------------------------- SUDA2
def brute_msu(rows, max_size, missing):
    """MSU counts by size for every record, enumerating every subset of keys."""
    m = len(rows[0])

    def unique(i, s):
        return not any(_match([rows[i][c] for c in s], [rows[j][c] for c in s], missing)
                       for j in range(len(rows)) if j != i)

    out = np.zeros((len(rows), max_size), dtype=int)
    for i in range(len(rows)):
        for k in range(1, max_size + 1):
            for s in combinations(range(m), k):
                if unique(i, s) and not any(unique(i, t) for r in range(1, k) for t in combinations(s, r)):
                    out[i, k - 1] += 1
    return out


@settings(max_examples=60, deadline=None)
@given(rows=frames, missing=st.sampled_from(["wildcard", "category"]), data=st.data())
def test_suda2_equals_brute_force(rows, missing, data):
    m = len(rows[0])
    max_size = data.draw(st.integers(1, m))
    f = pd.DataFrame(rows, columns=[f"k{j}" for j in range(m)])
    out = suda2(f, list(f.columns), max_size, missing)
    expected = brute_msu(rows, max_size, missing)
    np.testing.assert_array_equal(out[[f"msu_{k}" for k in range(1, max_size + 1)]].to_numpy(), expected)
    np.testing.assert_allclose(out["score"], expected @ [math.factorial(m - k) for k in range(1, max_size + 1)])


def test_suda2_published_examples():
    # sdcMicro test_suda2.R, "suda2 book example": scores of records 5..8 are 4, 2, 6, 8
    tab = pd.DataFrame({"age": ["20s"] * 7 + ["60s"],
                        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
                        "income": ["50k+", "50k+"] + ["50k-"] * 6,
                        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool", "university"]})
    out = suda2(tab, list(tab.columns))
    assert out["score"].tolist()[4:] == [4, 2, 6, 8]
    # record 8: unique on age alone (3! = 6) and on gender x education (2! = 2)
    assert out.loc[7, ["msu_1", "msu_2", "msu_3", "msu_4"]].tolist() == [1, 1, 0, 0]


def test_dis_suda_by_hand():
    tab = pd.DataFrame({"a": [1, 1, 2, 2, 3, 4], "b": [1, 1, 1, 2, 2, 2], "c": [1, 1, 1, 1, 1, 1]})
    out = suda2(tab, ["a", "b", "c"], dis_fraction=0.1)
    # uniques on all keys: records 3..6 (U = 4); one pair (P = 2). M = 3: Q = 1.25
    # record 3 (a=2,b=1): MSU {a,b} -> 1! = 1; record 4 (a=2,b=2): {a,b} -> 1;
    # record 5 (a=3): {a} -> 2! = 2; record 6 (a=4): {a} -> 2
    assert out["score"].tolist() == [0, 0, 1, 1, 2, 2]
    dis = 4 * 0.1 / (4 * 0.1 + 2 * 0.9)
    q = 1.25
    adj = 2 * 1 + 2 * 2**-q
    expected = [0, 0] + [1 / (1 + (4 / dis - 4) / (s**q * adj)) for s in (1, 1, 2, 2)]
    np.testing.assert_allclose(out["dis_score"], expected)


def test_suda2_strata_and_many_keys():
    rng = np.random.default_rng(1)
    f = pd.DataFrame(rng.integers(0, 3, size=(60, 11)), columns=[f"k{j}" for j in range(11)])
    out = suda2(f, [f"k{j}" for j in range(10)], max_size=3, strata="k10")
    for s, part in f.groupby("k10"):
        alone = suda2(part, [f"k{j}" for j in range(10)], max_size=3)
        pd.testing.assert_frame_equal(out.loc[part.index], alone)
    assert list(out.columns) == ["msu_1", "msu_2", "msu_3", "score", "dis_score"]


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, error, words", [
    (lambda f: frequencies(f, ["nope"]), SchemaError, "'nope'"),
    (lambda f: frequencies(f, []), SchemaError, "at least one"),
    (lambda f: frequencies(f, ["sex", "sex"]), SchemaError, "twice"),
    (lambda f: frequencies(f, ["sex"], "nope"), SchemaError, "'nope'"),
    (lambda f: frequencies(f, ["sex"], missing="drop"), ParameterError, "'missing'"),
    (lambda f: frequencies(f.assign(w=-1.0), ["sex"], "w"), DataError, "'w'"),
    (lambda f: frequencies(f.iloc[:0], ["sex"]), DataError, "empty"),
    (lambda f: frequencies(f.to_numpy(), ["sex"]), DataError, "DataFrame"),
    (lambda f: frequencies(f, ["sex"], strata=["sex"]), SchemaError, "stratum"),
    (lambda f: k_anonymity_violations(f, ["sex"], 0), ParameterError, "'k'"),
    (lambda f: global_risk(f, ["sex"], "w", household="nope"), SchemaError, "'nope'"),
    (lambda f: global_risk(f, ["sex"], "w", threshold=2.0), ParameterError, "'threshold'"),
    (lambda f: suda2(f, ["sex"], max_size=3), ParameterError, "'max_size'"),
    (lambda f: suda2(f, ["sex"], dis_fraction=1.0), ParameterError, "'dis_fraction'"),
    (lambda f: suda2(f, ["sex"], missing="x"), ParameterError, "'missing'"),
])
def test_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call(ten_records())


def test_weight_error_names_rows_not_values():
    f = ten_records()
    f.loc[3, "w"] = float("nan")
    with pytest.raises(DataError) as err:
        frequencies(f, ["sex"], "w")
    assert "rows 4" in str(err.value) and "nan" not in str(err.value).lower()


# ------------------------------------------------------------- summary and CLI
def test_risk_summary_aggregates_only():
    from sdckit.risk.summary import risk_summary
    f = ten_records().assign(hh=[1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    d = risk_summary(f, ["sex", "region"], "w", "hh", threshold=0.05).to_dict()
    assert d["sample_uniques"] == 2 and d["k_anonymity_violations"] == {"2": 2, "3": 4, "5": 10}
    assert sum(d["risk_bands"].values()) == 10 and d["risk_bands"]["(0.5, 1]"] == 1
    # without sex, (N) has 4 records, (S) 3, (E) 3: no unique; without region, no unique
    assert d["sample_uniques_without_key"] == {"sex": 0, "region": 0}
    assert d["suda2"]["records_with_msu"] == 2 and d["suda2"]["msu_by_size"] == {"1": 0, "2": 2}
    text = str(d)
    assert "'N'" not in text and "'F'" not in text  # no key value leaks into the summary


def test_cli_risk(tmp_path, cli):
    out = tmp_path / "r.json"
    done = cli("risk", str(DATA / "francdat.csv"), "--keys", "Key1,Key2,Key3,Key4", "--weight", "w",
                   "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "expected re-identifications" in done.stdout
    d = json.loads(out.read_text())
    expected = [bf2(2 / 110)] * 2 + [bf2(2 / 84.5)] * 2 + [log(17) / 16, log(541) / 540, log(8) / 7, log(5) / 4]
    assert d["expected_reidentifications"] == pytest.approx(sum(expected))
    assert d["sample_uniques"] == 4


@pytest.mark.parametrize("args, words", [
    (["--keys", "Key1,nope"], "'nope'"),
    (["--keys", "Key1", "--weight", "Num9"], "'Num9'"),
    (["--keys", "Key1", "--missing", "drop"], "'missing'"),
])
def test_cli_risk_bad_input(args, words, cli):
    done = cli("risk", str(DATA / "francdat.csv"), *args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------- l-diversity (measure)
def test_l_diversity_by_hand_and_missing_rules():
    from sdckit.risk import l_diversity
    f = pd.DataFrame({"zip": [1, 1, 1, 2, 2, None], "disease": ["flu", "flu", "hiv", "flu", "flu", "tb"]})
    cat = l_diversity(f, ["zip"], "disease", missing="category")
    assert cat["distinct_l"].tolist() == [2, 2, 2, 1, 1, 1]
    h = -(2 / 3 * log(2 / 3) + 1 / 3 * log(1 / 3))  # zip 1: flu 2, hiv 1
    np.testing.assert_allclose(cat["entropy_l"], [math.exp(h)] * 3 + [1, 1, 1])
    wild = l_diversity(f, ["zip"], "disease")  # the missing zip joins both classes
    assert wild["distinct_l"].tolist() == [3, 3, 3, 2, 2, 3]
    assert wild["fk"].tolist() == [4, 4, 4, 3, 3, 6]
    h2 = -(2 / 3 * log(2 / 3) + 1 / 3 * log(1 / 3))  # zip 2 + missing: flu 2, tb 1
    assert wild["entropy_l"].iloc[3] == pytest.approx(math.exp(h2))


def test_l_diversity_agrees_with_the_anonymity_criteria():
    from sdckit.anonymity import check
    from sdckit.anonymity.criteria import DistinctLDiversity, EntropyLDiversity
    from sdckit.risk import l_diversity
    rng = np.random.default_rng(3)
    f = pd.DataFrame({"a": rng.integers(0, 3, 40), "b": rng.integers(0, 2, 40), "s": rng.integers(0, 4, 40)})
    ours = l_diversity(f, ["a", "b"], "s", missing="category")
    rep = check(f, ["a", "b"], [DistinctLDiversity(2, "s"), EntropyLDiversity(1.5, "s")])
    assert ours["distinct_l"].min() == min(s["worst"] for s in rep.summary if "distinct" in s["criterion"])
    assert ours["entropy_l"].min() == pytest.approx(min(s["worst"] for s in rep.summary if "entropy" in s["criterion"]))


def test_l_diversity_bad_input():
    from sdckit.risk import l_diversity
    with pytest.raises(SchemaError, match="'nope'"):
        l_diversity(ten_records(), ["sex"], "nope")
    with pytest.raises(SchemaError, match="cannot also be"):
        l_diversity(ten_records(), ["sex"], "sex")


# ------------------------------------------------------------- population models (ARX)
@pytest.fixture(scope="module")
def adult():
    return pd.read_csv(Path(__file__).parent / "data" / "adult" / "adult.csv.gz", sep=";")


@pytest.mark.parametrize("pi, expected, model", [
    # ARX TestRiskMetrics.testDecisionRule2: adult.csv, all 9 attributes quasi-identifying;
    # ARX compares truncated to 4 decimals
    (0.1, 0.27684993883653597, "pitman"),
    (0.2, 0.3577099234829125, "zayatz"),
    (0.01, 0.1446083531167384, "pitman"),
    (1.0, 0.5142895033485844, None),
])
def test_population_uniqueness_equals_arx(adult, pi, expected, model):
    from sdckit.risk import population_risk
    r = population_risk(adult, list(adult.columns), sampling_fraction=pi)
    assert r.dankar == pytest.approx(expected, abs=1e-8)
    assert r.sample_uniqueness == pytest.approx(0.5142895033485844)
    assert r.dankar <= r.sample_uniqueness + 1e-12
    if model:
        assert r.dankar_model == model
    if pi == 0.1:  # ARX: when Dankar picks Zayatz at 10%, the figure is 0.3207402393466189
        assert r.zayatz == pytest.approx(0.3207402393466189, abs=1e-8)


def test_attacker_models_by_hand():
    from sdckit.risk import population_risk
    # classes (sex, region) of ten_records: sizes 3, 2, 1, 1, 3; weighted sizes 60, 100, 50, 1, 75
    r = population_risk(ten_records(), ["sex", "region"], weight="w", threshold=0.4)
    assert r.population == 286 and r.sample_uniqueness == 0.2
    assert r.prosecutor == {"highest": 1.0, "lowest": 1 / 3, "records_at_risk": 0.4, "average": 0.5}  # 1/f > 0.4 for f = 1, 2: 4 records
    f = np.array([3, 2, 1, 1, 3])
    F = np.array([60, 100, 50, 1, 75])
    assert r.journalist["highest"] == 1.0 and r.journalist["lowest"] == 1 / 100
    assert r.journalist["records_at_risk"] == pytest.approx(0.1)  # only (M,S): 1/1 > 0.4
    assert r.journalist["average"] == pytest.approx(max(5 / 286, (f / F).sum() / 10))
    assert r.marketer == pytest.approx((f / F).sum() / 10)
    assert set(r.to_dict()) >= {"population_uniqueness", "prosecutor", "journalist", "marketer"}


def test_population_risk_bad_input():
    from sdckit.risk import population_risk
    with pytest.raises(ParameterError, match="exactly one"):
        population_risk(ten_records(), ["sex"])
    with pytest.raises(ParameterError, match="'sampling_fraction'"):
        population_risk(ten_records(), ["sex"], sampling_fraction=0.0)
    with pytest.raises(ParameterError, match="'population_size'"):
        population_risk(ten_records(), ["sex"], population_size=3)


# ------------------------------------------------------------- Gower linkage
def test_gower_distance_by_hand():
    from sdckit.risk.gower import gower_distances
    x = pd.DataFrame({"age": [20.0, 60.0], "sex": ["f", "m"], "zip": ["1", None]})
    y = pd.DataFrame({"age": [30.0], "sex": ["m"], "zip": ["1"]})
    d = gower_distances(x, y)
    # range of age over both files: 40. To x0: (10/40 + 1 + 0) / 3; to x1: zip missing -> (30/40 + 0) / 2
    np.testing.assert_allclose(d, [[(0.25 + 1) / 3, 0.75 / 2]])


def test_gower_linkage_brute_force_and_metric_option():
    from sdckit.risk import distance_linkage
    from sdckit.risk.gower import gower_distances
    rng = np.random.default_rng(5)
    x = pd.DataFrame({"age": rng.integers(18, 90, 30).astype(float), "sex": rng.choice(["f", "m"], 30),
                      "edu": rng.choice(list("abcd"), 30)})
    y = x.copy()
    y["age"] = y["age"] + rng.normal(0, 3, 30)
    y.loc[rng.choice(30, 8, replace=False), "edu"] = "a"
    r = distance_linkage(x, y, metric="gower")
    d = gower_distances(x, y)
    credit = []
    for i in range(30):
        tied = np.flatnonzero(d[i] <= d[i].min() * (1 + 1e-9) + 1e-12)
        credit.append(1 / len(tied) if i in tied else 0.0)
    assert r.rate == pytest.approx(np.mean(credit))
    assert r.records["nearest"].tolist() == [int(np.argmin(row)) for row in d]
    with pytest.raises(ParameterError, match="'metric'"):
        distance_linkage(x, y, metric="cosine")
    with pytest.raises(SchemaError, match="'nope'"):
        distance_linkage(x, y, ["nope"], metric="gower")


# ------------------------------------------------------------- report section
def test_report_risk_section_counts_only():
    from sdckit.core.schema import Schema
    from sdckit.report.render import environment
    from sdckit.report.risk_section import risk_section
    f = ten_records().assign(hh=[1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    schema = Schema.infer(f, quasi=["sex", "region"])
    section, data = risk_section(f, schema, "w", "hh")
    g = global_risk(f, ["sex", "region"], "w", "hh")
    assert data["expected_reidentifications"] == pytest.approx(g.expected_reidentifications)
    assert data["household_risk"] == pytest.approx(g.household_risk)
    html = environment().get_template("risk.html").render(section=section)
    assert "<svg" in html and "expected re-identifications" in html
    for value in ("&#39;N&#39;", ">N<", ">S<", ">E<", ">F<", ">M<"):  # no key value shown
        assert value not in html
    none, data = risk_section(f, Schema.infer(f), None)
    assert data is None and "no nominal or ordinal quasi-identifier" in none.note
