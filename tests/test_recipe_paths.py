"""Relative paths inside method parameters (hierarchies) are taken from the recipe's folder."""

from __future__ import annotations

import pandas as pd

RECIPE = """
seed = 1
allow_weak_seed = true  # a readable test seed; releases need 128 bits
[input]
path = "people.csv"
[schema]
quasi = ["REGION"]
[[method]]
name = "global_recoding"
hierarchy = "hierarchies/region.csv"
level = 1
columns = ["REGION"]
[output]
dir = "out"
format = "csv"
"""


def test_hierarchy_path_relative_to_recipe(cli, tmp_path):
    project = tmp_path / "project"
    (project / "hierarchies").mkdir(parents=True)
    pd.DataFrame({"REGION": ["north", "south", "east", "north"], "X": [1, 2, 3, 4]}).to_csv(
        project / "people.csv", index=False
    )
    # ARX layout: value;level 1;level 2
    (project / "hierarchies" / "region.csv").write_text(
        "north;vertical;*\nsouth;vertical;*\neast;horizontal;*\n"
    )
    (project / "recipe.toml").write_text(RECIPE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = cli("protect", str(project / "recipe.toml"), cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(project / "out" / "people_protected.csv")
    assert out["REGION"].tolist() == ["vertical", "vertical", "horizontal", "vertical"]


def test_missing_hierarchy_file_is_named(cli, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    pd.DataFrame({"REGION": ["north"], "X": [1]}).to_csv(project / "people.csv", index=False)
    (project / "recipe.toml").write_text(RECIPE)
    result = cli("protect", str(project / "recipe.toml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "region.csv" in result.stderr and "Traceback" not in result.stderr


def test_every_method_taking_hierarchies_declares_them_as_paths():
    import dataclasses

    from sdckit.methods import available

    for name, cls in available().items():
        # record swapping's ``hierarchy`` is sdcMicro's: the geographic columns, never a file
        fields = {f.name for f in dataclasses.fields(cls) if f.type != "tuple[str, ...]"}
        for field in fields & {"hierarchy", "hierarchies"}:
            assert field in cls.path_params, f"{name}.{field} is not resolved from the recipe folder"
