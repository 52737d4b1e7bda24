"""The non-perturbative methods and synthesizers from a TOML recipe through ``sdckit protect``."""

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
identifier = ["id"]
quasi = ["age", "zip", "sex"]
confidential = ["income"]
[schema.kinds]
zip = "nominal"
[[method]]
name = "top_bottom_coding"
top = 80.0
columns = ["age"]
[[method]]
name = "global_recoding"
bins = [0, 30, 50, inf]
labels = ["young", "middle", "old"]
[[method]]
name = "global_recoding"
mapping = { "13053" = "130**", "13068" = "130**" }
columns = ["zip"]
[[method]]
name = "local_suppression"
k = 3
importance = ["age"]
[[method]]
name = "rounding"
base = 1000.0
columns = ["income"]
[output]
dir = "out"
format = "csv"
"""


def test_recipe_with_recoding_suppression_and_rounding(tmp_path, cli):
    rng = np.random.default_rng(0)
    n = 60
    pd.DataFrame(
        {
            "id": range(n),
            "age": rng.integers(18, 95, n),
            "zip": rng.choice(["13053", "13068", "14850"], n),
            "sex": rng.choice(["F", "M"], n),
            "income": rng.normal(40_000, 9_000, n).round(2),
        }
    ).to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "recipe.toml").write_text(RECIPE)
    done = cli("protect", "recipe.toml", "--json", "result.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = pd.read_csv(tmp_path / "out" / "people_protected.csv", dtype={"zip": str})
    assert "id" not in out.columns
    assert set(out["age"].dropna()) <= {"young", "middle", "old"}
    assert set(out["zip"].dropna()) <= {"130**", "14850"}
    assert (out["income"] % 1000 == 0).all()
    manifest = json.loads((tmp_path / "result.json").read_text())["manifest"]
    names = [m["name"] for m in manifest["methods"]]
    assert names == ["top_bottom_coding", "global_recoding", "global_recoding", "local_suppression", "rounding"]
    step = manifest["methods"][3]
    # 3-anonymous under the wildcard rule on (age, zip, sex), checked pair by pair
    q = out[["age", "zip", "sex"]]
    miss = q.isna().to_numpy()
    vals = q.to_numpy(dtype=object)
    counts = [
        sum(all(miss[i, j] or miss[s, j] or vals[i, j] == vals[s, j] for j in range(3)) for s in range(n))
        for i in range(n)
    ]
    assert min(counts) >= 3
    assert json.dumps(step).count("suppressed") >= 1


def test_recipe_with_a_synthesizer(tmp_path, cli):
    pd.DataFrame({"x": np.arange(30.0), "y": np.arange(30.0) ** 2}).to_csv(tmp_path / "d.csv", index=False)
    good = '[input]\npath = "d.csv"\n[[method]]\nname = "cart_synthesizer"\nn = 50\n[output]\ndir = "o"\n'
    (tmp_path / "good.toml").write_text(good)
    done = cli("protect", "good.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(tmp_path / "o" / "d_protected.csv")) == 50
