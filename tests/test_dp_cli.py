"""``sdckit dp-error`` and (k,epsilon)-anonymity in a recipe, through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest



@pytest.fixture
def grouped_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({
        "age": rng.integers(20, 70, n),
        "height": rng.normal(170, 8, n).round(1),
    })
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return frame, path


def test_dp_error_predicts_eq_8_for_each_epsilon(cli, grouped_csv, tmp_path):
    frame, path = grouped_csv
    out = tmp_path / "pred.json"
    result = cli("dp-error", str(path), "--k-quasi", "age", "--epsilon-quasi", "height",
                 "--k", "10", "--epsilon", "0.5,2", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "Expected average relative error" in result.stdout
    rows = json.loads(out.read_text())["predictions"]
    assert [r["epsilon"] for r in rows] == [0.5, 2.0]
    # Eq. 8 is proportional to 1/epsilon: four times smaller at epsilon 2 than at 0.5.
    assert rows[0]["height"] == pytest.approx(4 * rows[1]["height"])
    assert rows[0]["records"] == len(frame) and rows[0]["classes"] >= 2


@pytest.mark.parametrize(("args", "message"), [
    (["--epsilon", "0"], "'epsilon' parameter"),
    (["--epsilon", "a,b", "--hierarchy", "age"], "--epsilon must be comma-separated numbers"),
])
def test_dp_error_bad_input_is_one_line_and_exit_2(cli, grouped_csv, args, message):
    _, path = grouped_csv
    result = cli("dp-error", str(path), "--k-quasi", "age", "--epsilon-quasi", "height", "--k", "5", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_recipe_runs_k_epsilon_anonymity(cli, grouped_csv, tmp_path):
    _, path = grouped_csv
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(f"""
seed = 3
allow_weak_seed = true  # a readable test seed; releases need 128 bits
[input]
path = "{path.as_posix()}"
[schema]
quasi = ["age", "height"]
[[method]]
name = "k_epsilon_anonymity"
k = 10
epsilon = 1.0
k_quasi = ["age"]
epsilon_quasi = ["height"]
algorithm = "mondrian"
alpha = 0.99
[output]
dir = "{(tmp_path / 'out').as_posix()}"
""")
    result = cli("protect", str(recipe))
    assert result.returncode == 0, result.stderr
    manifest = json.loads(next((tmp_path / "out").glob("*.manifest.json")).read_text())
    info = manifest["methods"][0]["info"]
    assert manifest["methods"][0]["name"] == "k_epsilon_anonymity"
    assert info["budget"]["spent"] == "1" and "expected_relative_error" in info
