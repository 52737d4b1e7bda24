"""``sdckit assess`` and ``sdckit verify-record``."""

import json

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    x = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = x + rng.normal(scale=0.001, size=x.shape)  # barely masked: linkable
    x.to_csv(tmp_path / "orig.csv", index=False)
    y.to_csv(tmp_path / "rel.csv", index=False)
    return tmp_path, x, y


def test_assess_prints_summary_and_writes_json(cli, files):
    path, x, _ = files
    out = path / "assess.json"
    result = cli("assess", str(path / "orig.csv"), str(path / "rel.csv"), "--seed", "1",
                 "--random", "5000", "--json", str(out))
    assert result.returncode == 0, result.stderr
    for label in ("permutation distance", "correct / multiple / wrong", "Hellinger",
                  "null baseline", "p-value", "not plausibly random"):
        assert label in result.stdout
    data = json.loads(out.read_text())
    assert data["columns"] == ["a", "b", "c"] and data["n_original"] == 300
    v = data["verification"]
    assert v["n_random"] == 5000 and v["null"] == "copula"
    # every record linked closer than random: P sits in the lowest of K = 18 quantile bins of Q
    # (mass ~1/K there), so H ~ sqrt(1 - sqrt(1/18)) = 0.87
    assert v["hellinger"] > 0.85 and v["p_value"] == 0.0
    assert len(v["records"]) == 300 and {"record", "distance", "p_random"} <= set(v["records"][0])
    link = data["linkage"]
    assert link["correct"] + link["multiple"] + link["wrong"] == 300
    assert link["correct"] > 250
    assert isinstance(link["records"][0]["matches"], list)


def test_assess_columns_and_bad_input(cli, files):
    path, _, _ = files
    orig, rel = str(path / "orig.csv"), str(path / "rel.csv")
    ok = cli("assess", orig, rel, "--columns", "a,b", "--random", "2000", "--null",
             "independent", "--seed", "3", "--json", str(path / "ab.json"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads((path / "ab.json").read_text())["columns"] == ["a", "b"]
    bad = cli("assess", orig, rel, "--columns", "a,zz")
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "'zz'" in bad.stderr and "Traceback" not in bad.stderr


def test_verify_record(cli, files):
    path, x, _ = files
    record = ",".join(f"{c}={float(x.loc[5, c])!r}" for c in x.columns)
    out = path / "me.json"
    result = cli("verify-record", str(path / "rel.csv"), "--record", record, "--permutation",
                 "--random", "2000", "--seed", "1", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "permutation distance" in result.stdout
    data = json.loads(out.read_text())
    # the release barely moved her record: found at distance 0-1, not plausibly random
    assert data["distance"] <= 1 and 5 in data["matches"]
    assert data["plausibly_random"] is False
    bad = cli("verify-record", str(path / "rel.csv"), "--record", "a=1,b")
    assert bad.returncode == 2 and "Bad --record part 'b'" in bad.stderr
    unknown = cli("verify-record", str(path / "rel.csv"), "--record", "a=1,zz=2")
    assert unknown.returncode == 2 and "'zz'" in unknown.stderr


def test_ordinal_columns_with_order(cli, tmp_path):
    rng = np.random.default_rng(1)
    grades = np.array(["low", "mid", "high"])
    x = pd.DataFrame({"grade": grades[rng.integers(0, 3, 60)], "age": rng.integers(20, 70, 60)})
    x.to_csv(tmp_path / "o.csv", index=False)
    x.sample(frac=1, random_state=2).to_csv(tmp_path / "r.csv", index=False)
    o, r = str(tmp_path / "o.csv"), str(tmp_path / "r.csv")
    ok = cli("assess", o, r, "--random", "500", "--order", "grade=low|mid|high", "--seed", "1")
    assert ok.returncode == 0, ok.stderr
    mine = cli("verify-record", r, "--record", "grade=mid,age=40", "--order", "grade=low|mid|high")
    assert mine.returncode == 0, mine.stderr
    bad = cli("assess", o, r, "--order", "grade=low")
    assert bad.returncode == 2 and "Bad --order 'grade=low'" in bad.stderr


def test_assess_on_a_sample_of_record_pairs(cli, files):
    """``--records N`` (issue 28 item 6): the assessment runs on N record pairs drawn at random
    and says so; a sample of one pair is refused in one line."""
    path, _, _ = files
    orig, rel = str(path / "orig.csv"), str(path / "rel.csv")
    out = path / "sampled.json"
    result = cli("assess", orig, rel, "--seed", "3", "--records", "120", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "random sample of record pairs" in result.stdout and "120 of 300" in result.stdout
    data = json.loads(out.read_text())
    assert data["records"] == 120 and data["n_original"] == 300
    assert data["linkage"]["correct"] + data["linkage"]["multiple"] + data["linkage"]["wrong"] == 120
    bad = cli("assess", orig, rel, "--records", "1")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "records" in bad.stderr
