"""The perturbative masking methods in a recipe, through the CLI (the example of
docs/reference/microdata-guide.md)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

RECIPE = """
seed = 3
allow_weak_seed = true  # a readable test seed; releases need 128 bits
[input]
path = "people.csv"
[schema]
quasi = ["age", "region"]
confidential = ["income", "disease"]
non_confidential = ["hours"]

[[method]]
name = "microaggregation"
k = 3
columns = ["age"]

[[method]]
name = "data_shuffling"
columns = ["income"]

[[method]]
name = "pram"
invariant = true
[method.matrix.disease]
flu = { flu = 0.8, cold = 0.2 }
cold = { flu = 0.3, cold = 0.7 }

[output]
dir = "out"
format = "csv"
"""


def test_recipe_with_microaggregation_shuffling_and_pram(tmp_path, cli):
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "region": rng.choice(["n", "s"], n),
            "income": rng.normal(3000, 500, n).round(2),
            "hours": rng.normal(38, 5, n).round(1),
            "disease": rng.choice(["flu", "cold"], n),
        }
    )
    frame.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "recipe.toml").write_text(RECIPE)
    result = cli("protect", "recipe.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(next((tmp_path / "out").glob("*.csv")))
    assert out.groupby("age").size().min() >= 3
    assert sorted(out["income"]) == sorted(frame["income"])
    assert set(out["disease"]) <= {"flu", "cold"}
    manifest = json.loads(next((tmp_path / "out").glob("*.manifest.json")).read_text())
    names = [m["name"] for m in manifest["methods"]]
    assert names == ["microaggregation", "data_shuffling", "pram"]
    assert manifest["methods"][2]["params"]["matrix"] == {
        "disease": {"flu": {"flu": 0.8, "cold": 0.2}, "cold": {"flu": 0.3, "cold": 0.7}}
    }
