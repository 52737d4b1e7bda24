"""tune and compare work on data with nominal columns and a dropped identifier, without
--columns (issue 12 section 5): the measures use the columns both data sets have that can be
ranked, and say which."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

SEED = "ab" * 16


def _census(tmp_path):
    rng = np.random.default_rng(5)
    n = 300
    pd.DataFrame({"ID": range(n), "AGE": rng.integers(18, 90, n), "ZIP": rng.choice(["13053", "14850"], n),
                  "REGION": rng.choice(list("NSEW"), n), "INCOME": rng.normal(3e4, 5e3, n).round(1)}
                 ).to_csv(tmp_path / "census.csv", index=False)


HEAD = f'seed = "{SEED}"\n[input]\npath = "census.csv"\n[schema]\nidentifier = ["ID"]\n' \
       'quasi = ["AGE", "ZIP", "REGION"]\nconfidential = ["INCOME"]\n[schema.kinds]\nZIP = "nominal"\n'


def test_tune_without_columns_on_nominal_data(tmp_path, cli):
    _census(tmp_path)
    (tmp_path / "recipe.toml").write_text(HEAD + '[[method]]\nname = "additive_noise"\nalpha = 0.1\n'
                                          '[report]\nn_random = 1000\nn_null = 5\n')
    result = cli("tune", "recipe.toml", "--param", "alpha", "--low", "0.01", "--high", "1", "--steps", "2",
                 "--json", "tune.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "tune.json").read_text())


def test_compare_without_columns_on_nominal_data(tmp_path, cli):
    _census(tmp_path)
    (tmp_path / "compare.toml").write_text(
        HEAD + '[compare]\nn_random = 1000\nn_null = 5\n[output]\ndir = "compare-out"\n'
        '[[candidate]]\nlabel = "noise 1%"\n[[candidate.method]]\nname = "additive_noise"\nalpha = 0.01\n'
        '[[sweep]]\nmethod = "microaggregation"\nparam = "k"\nvalues = [3, 5]\nlabel = "MDAV"\n')
    result = cli("compare", "compare.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "noise 1%" in result.stdout and "MDAV" in result.stdout
