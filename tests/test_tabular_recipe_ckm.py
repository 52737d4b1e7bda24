"""``[protection] method = "cell_key"`` in a table recipe and ``sdckit table protect`` (issue 30
section 2): the perturbed table, the confidential cell file, a manifest without the seed or the
keys, and bad recipes refused on one line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from sdckit.tabular import CellKeySumParams, cell_key_counts, cell_key_sums, ptable, ptable_numeric, record_keys

SEED = "9f1e0c2a9b7d4e3f8a6c1b0d2e4f6a8c"


def _records(tmp_path):
    rng = np.random.default_rng(3)
    f = pd.DataFrame({"region": rng.choice(["r1", "r2", "r3"], 300), "sex": rng.choice(["f", "m"], 300),
                      "income": rng.integers(0, 4000, 300).astype(float)})
    f["rkey"] = rng.integers(0, 10 ** 8, 300) / 1e8
    f.to_csv(tmp_path / "persons.csv", index=False)
    return f


def _recipe(tmp_path, body, table_extra=""):
    (tmp_path / "r.toml").write_text(
        f'[table]\ninput = "persons.csv"\ndimensions = ["region", "sex"]\n{table_extra}\n'
        f'[protection]\nmethod = "cell_key"\n\n[cell_key]\n{body}\n')
    return str(tmp_path / "r.toml")


def test_count_recipe_publishes_the_perturbed_counts_and_no_secret(tmp_path, cli):
    f = _records(tmp_path)
    done = cli("table", "protect", _recipe(tmp_path, f'seed = "{SEED}"\nD = 3\nV = 2\njs = 1'), "--out",
               str(tmp_path / "o"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cell key method" in done.stdout and "Verdict" in done.stdout
    pub = pd.read_csv(tmp_path / "o" / "published.csv", dtype=str)
    assert list(pub.columns) == ["region", "sex", "n_pert"] and len(pub) == 4 * 3
    f["k"] = record_keys(len(f), SEED)  # the keys the seed gives, in record order
    ref = cell_key_counts(f, ["region", "sex"], "k", ptable(3, 2, js=1))
    assert pub["n_pert"].astype(int).tolist() == ref["n_pert"].tolist()
    text = (tmp_path / "o" / "manifest.json").read_text()
    man = json.loads(text)
    assert SEED not in text and "rkey" not in text and man["protection"] == "cell_key"
    assert man["recipe"]["cell_key"]["seed"] == "given by the user"
    cells = pd.read_csv(tmp_path / "o" / "cells.csv")
    assert {"n", "cell_key", "pert"} <= set(cells.columns)  # the confidential file


def test_sum_recipe_uses_the_flex_function(tmp_path, cli):
    f = _records(tmp_path)
    body = ('record_key = "rkey"\nD = 3\nV = 1\nicat = [1, 3]\nfp = 500\np_small = 0.2\np_large = 0.03\n'
            'q = 2\nepsilon = [1, 0.5]\ntop_k = 2\nsame_key = false')
    done = cli("table", "protect", _recipe(tmp_path, body, 'response = "income"'), "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stdout + done.stderr
    pub = pd.read_csv(tmp_path / "o" / "published.csv", dtype={"region": str, "sex": str})
    params = CellKeySumParams(ptab=ptable_numeric(3, 1, [1, 3]), fp=500, p_small=0.2, p_large=0.03, q=2,
                              epsilon=(1, 0.5), top_k=2, same_key=False)
    ref = cell_key_sums(f, ["region", "sex"], "rkey", "income", params)
    assert np.allclose(pub["sum_pert"], ref["sum_pert"]) and not np.allclose(ref["sum_pert"], ref["sum"])
    assert "rkey" not in pub.columns


def test_bad_cell_key_recipes_exit_2_on_one_line(tmp_path, cli):
    _records(tmp_path)
    for body, word in [(f'record_key = "rkey"\nseed = "{SEED}"\nD = 3\nV = 2', "not both"),
                       ('record_key = "rkey"\nV = 2', "needs D and V"),
                       ('record_key = "rkey"\nD = 3\nV = 2\nfp = 10', "magnitude"),
                       ('record_key = "rkey"\nD = 3\nV = 2\ntype = "median"', "type"),
                       ('seed = "7"\nD = 3\nV = 2', "seed")]:
        done = cli("table", "protect", _recipe(tmp_path, body), "--out", str(tmp_path / "o"))
        assert done.returncode == 2, (body, done.stdout + done.stderr)
        assert word in done.stderr and SEED not in done.stdout + done.stderr and len(done.stderr.strip().splitlines()) == 1


def _sum_recipe(tmp_path, cli, body, head='record_key = "rkey"\nD = 3\nV = 1\nicat = [1, 3]\n'):
    done = cli("table", "protect", _recipe(tmp_path, head + body, 'response = "income"'), "--out",
               str(tmp_path / "o"))
    assert done.returncode == 0, done.stdout + done.stderr
    pub = pd.read_csv(tmp_path / "o" / "published.csv", dtype={"region": str, "sex": str})
    return pub, json.loads((tmp_path / "o" / "manifest.json").read_text())


def test_sum_recipe_takes_cellkeys_simple_approach(tmp_path, cli):
    """[cell_key] p = 0.1 is cellKey's ck_simpleparams(p = 0.1, epsilon): the published sums are
    cell_key_sums' with CellKeySumParams(p=0.1) (x_delta = x p epsilon, not the flex function)."""
    f = _records(tmp_path)
    pub, man = _sum_recipe(tmp_path, cli, "p = 0.1\nepsilon = [1, 0.5]\ntop_k = 2")
    simple = CellKeySumParams(ptab=ptable_numeric(3, 1, [1, 3]), p=0.1, epsilon=(1, 0.5), top_k=2)
    ref = cell_key_sums(f, ["region", "sex"], "rkey", "income", simple)
    assert np.allclose(pub["sum_pert"], ref["sum_pert"], rtol=1e-12) and not np.allclose(ref["sum_pert"], ref["sum"])
    # the first component's x_delta is the simple approach's x_1 p epsilon_1 where not rescaled
    big = ref["x_1"].abs() * 0.1 <= ref["sum"].abs()
    assert big.sum() >= 6 and np.allclose(ref.loc[big, "x_delta_1"], ref.loc[big, "x_1"] * 0.1)
    assert man["recipe"]["cell_key"]["p"] == 0.1 and "fp" not in man["recipe"]["cell_key"]


def test_sum_recipe_rounds_the_published_sums(tmp_path, cli):
    """round_to = 10 publishes each perturbed sum at its nearest multiple of 10 (the unrounded
    perturbed sum rounded by hand); without it the sums are unrounded, as before."""
    f = _records(tmp_path)
    pub, man = _sum_recipe(tmp_path, cli, "fp = 500\nround_to = 10")
    params = CellKeySumParams(ptab=ptable_numeric(3, 1, [1, 3]), fp=500, top_k=1)
    ref = cell_key_sums(f, ["region", "sex"], "rkey", "income", params)
    raw, rounded = ref["sum_pert"].to_numpy(), np.round(ref["sum_pert"].to_numpy() / 10) * 10
    assert not np.array_equal(raw, rounded)  # the unrounded sums are not all multiples of 10
    assert pub["sum_pert"].tolist() == rounded.tolist()
    assert man["recipe"]["cell_key"]["round_to"] == 10
    nz = ref["sum"].to_numpy() != 0  # the measures read the published (rounded) sums
    assert man["result"]["measures"]["changed"] == np.mean(rounded[nz] != ref["sum"].to_numpy()[nz])


def test_bad_sum_approaches_exit_2_on_one_line_naming_the_keys(tmp_path, cli):
    _records(tmp_path)
    base = 'record_key = "rkey"\nD = 3\nV = 2\n'
    for body, words in [("fp = 10\np = 0.1", ["not both", "'p'", "'fp'"]),
                        ("p = 0.1\np_small = 0.2", ["not both", "'p'", "'p_small'"]),
                        ("epsilon = [1]", ["needs 'fp'", "'p'"]),
                        ("p = 1.5", ["'p' parameter", "(0, 1]"]),
                        ("p = 0.1\nround_to = 0", ["'round_to' parameter", "> 0"]),
                        ("p = 0.1\nround_to = -5", ["'round_to' parameter"])]:
        done = cli("table", "protect", _recipe(tmp_path, base + body, 'response = "income"'), "--out",
                   str(tmp_path / "o"))
        assert done.returncode == 2, (body, done.stdout + done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "[cell_key]" in done.stderr, done.stderr
        for word in words:
            assert word in done.stderr, (body, word, done.stderr)
    done = cli("table", "protect", _recipe(tmp_path, base + "round_to = 1"), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "'round_to'" in done.stderr and "magnitude" in done.stderr  # counts: no round_to


def test_sum_recipe_reads_a_numeric_ptable_file(tmp_path, cli):
    """[cell_key] ptable = R's pt_export file of a numeric p-table (even and odd) instead of D, V:
    the sums are cell_key_sums' with that table read by read_ptable; with D too, one line."""
    import shutil
    from pathlib import Path

    from sdckit.tabular import read_ptable

    f = _records(tmp_path)
    shutil.copy(Path(__file__).parent / "data" / "cellkey" / "pt_export_nums_even_odd.txt", tmp_path / "pt.txt")
    pub, man = _sum_recipe(tmp_path, cli, "", head='record_key = "rkey"\nptable = "pt.txt"\np = 0.1\n')
    table = read_ptable(tmp_path / "pt.txt")
    ref = cell_key_sums(f, ["region", "sex"], "rkey", "income",
                        CellKeySumParams(ptab={k: g for k, g in table.groupby("type")}, p=0.1, top_k=1))
    assert np.allclose(pub["sum_pert"], ref["sum_pert"], rtol=1e-12) and not np.allclose(ref["sum_pert"], ref["sum"])
    assert man["result"]["parameters"]["derived"]["even_odd"] is True
    done = cli("table", "protect", _recipe(tmp_path, 'record_key = "rkey"\nptable = "pt.txt"\nD = 3\np = 0.1',
                                           'response = "income"'), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "either 'ptable'" in done.stderr and "'D'" in done.stderr
