"""Table protections as values (issue 29 item 1; DESIGN.md section 6): parameter rules in the one
template, the registry a table recipe reads, manifests from the fields, and ``apply`` running the
family's function. The common checks run over every registered protection."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit.core.errors import ParameterError
from sdckit.tabular import (CellKey, CellSuppression, ControlledRounding, Manual, MinFrequency, PPercent, Protection,
                            TabularAdjustment, adjust_table, cell_key_counts, protections, ptable, record_keys,
                            round_table, suppress)
from sdckit.tabular.recipe import load_table_recipe
from tabular_helpers import table2d

ROOT = Path(__file__).resolve().parents[1]
SEED = "c0ffee0123456789c0ffee0123456789"
PROTECTIONS = sorted(protections().items())
TEMPLATE = r"The '{}' parameter of {} must be .+\. Got .+ instead\."


def _records(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame({"region": rng.choice(["a", "b"], n), "sex": rng.choice(["f", "m"], n),
                         "rkey": rng.integers(0, 10 ** 8, n) / 1e8})


def _apply(protection: Protection):
    """The protection on the input it takes: a 2x2 table with margins, or records (cell key)."""
    if isinstance(protection, CellKey):
        return protection.apply(_records(), ["region", "sex"])
    return protection.apply(table2d([[10, 20], [30, 40]]))


def _one_line(exc: pytest.ExceptionInfo, *words: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and all(w in text for w in words), text


# ---------------------------------------------------------------------- parameter rules
@pytest.mark.parametrize("cls, params, name", [
    (CellSuppression, {"method": "exact"}, "method"),
    (CellSuppression, {"cost": "weight"}, "cost"),
    (CellSuppression, {"time_limit": 0}, "time_limit"),
    (CellSuppression, {"time_limit": True}, "time_limit"),
    (CellSuppression, {"rules": [3]}, "rules"),
    (ControlledRounding, {"base": 0}, "base"),
    (ControlledRounding, {"base": -5}, "base"),
    (ControlledRounding, {"base": 5, "mip_gap": 1}, "mip_gap"),
    (ControlledRounding, {"base": 5, "mip_gap": -0.1}, "mip_gap"),
    (ControlledRounding, {"base": 5, "method": "stochastic"}, "method"),
    (ControlledRounding, {"base": 5, "allow_weak_seed": "yes"}, "allow_weak_seed"),
    (TabularAdjustment, {"rules": [PPercent(10)], "cost": "square"}, "cost"),
    (TabularAdjustment, {"rules": [PPercent(10)], "integer": 1}, "integer"),
    (TabularAdjustment, {"rules": [PPercent(10)], "mip_gap": 1.0}, "mip_gap"),
    (TabularAdjustment, {}, "rules"),
    (CellKey, {"record_key": "rkey", "digits": 0}, "digits"),
    (CellKey, {"record_key": "rkey", "top_k": 7}, "top_k"),
    (CellKey, {"record_key": "rkey", "p_small": 1.01}, "p_small"),
    (CellKey, {"record_key": "rkey", "q": 0.99}, "q"),
    (CellKey, {"record_key": "rkey", "type": "median"}, "type"),
    (CellKey, {"record_key": "rkey", "D": 0}, "D"),
])
def test_a_bad_value_is_one_line_naming_the_parameter(cls, params, name):
    with pytest.raises(ParameterError, match=TEMPLATE.format(name, cls.__name__)) as e:
        cls(**params)
    _one_line(e)


@pytest.mark.parametrize("cls, params", [
    (CellSuppression, {"time_limit": 1e-9}), (CellSuppression, {"time_limit": math.inf}),
    (CellSuppression, {"rules": []}), (CellSuppression, {"method": "fast", "cost": "unity"}),
    (ControlledRounding, {"base": 1e-9}), (ControlledRounding, {"base": 5, "mip_gap": 0}),
    (ControlledRounding, {"base": 5, "mip_gap": 0.999}),
    (ControlledRounding, {"base": 5, "method": "random", "seed": 7, "allow_weak_seed": True}),
    (TabularAdjustment, {"rules": [PPercent(10)], "integer": False, "mip_gap": 0, "time_limit": 0.5}),
    (CellKey, {"record_key": "rkey", "digits": 1, "top_k": 6, "p_small": 1, "p_large": 0, "q": 1, "mu_c": 0}),
    (CellKey, {"seed": SEED, "js": 0, "supp_freq": 0}),
])
def test_boundary_values_are_accepted(cls, params):
    value = cls(**params)
    assert all(getattr(value, k) == (tuple(v) if isinstance(v, list) else v) for k, v in params.items())


def test_a_seed_is_checked_and_never_quoted():
    with pytest.raises(ParameterError, match="weak") as e:
        ControlledRounding(5, method="random", seed=7)
    _one_line(e)
    with pytest.raises(ParameterError, match="'seed' must be a hex string") as e:
        ControlledRounding(5, method="random", seed="my secret phrase")
    assert "my secret phrase" not in str(e.value)
    value = ControlledRounding(5, method="random", seed=SEED)
    assert SEED not in repr(value) and SEED not in json.dumps(value.to_manifest())
    assert value.to_manifest()["provenance"] == {"seed": "given by the user", "seed_strength": "strong"}


def test_the_cell_key_method_needs_record_keys_or_a_seed_not_both():
    for params in ({}, {"record_key": "rkey", "seed": SEED}):
        with pytest.raises(ParameterError, match="either record_key .* not both") as e:
            CellKey(**params)
        _one_line(e)


# ---------------------------------------------------------------------- common checks
@pytest.mark.parametrize(("name", "cls"), PROTECTIONS)
def test_registered_under_its_recipe_name(name, cls):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name) and cls.name == name and issubclass(cls, Protection)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


@pytest.mark.parametrize(("name", "cls"), PROTECTIONS)
def test_every_parameter_in_the_manifest_and_back(name, cls):
    value = cls(**cls.example)
    manifest = json.loads(json.dumps(value.to_manifest()))  # JSON as it is written
    fields = {f.name for f in dataclasses.fields(cls)}
    assert manifest["name"] == name and manifest["class"] == cls.__name__
    assert set(manifest["params"]) == fields - cls.secrets and cls.secrets <= fields
    assert Protection.from_manifest(manifest) == value


@pytest.mark.parametrize(("name", "cls"), PROTECTIONS)
def test_every_rule_refuses_a_wrong_value_with_the_template(name, cls):
    assert set(cls.constraints) <= {f.name for f in dataclasses.fields(cls)}
    for param in cls.constraints:  # NaN: no number, text, flag, choice or list of rules
        with pytest.raises(ParameterError, match=TEMPLATE.format(param, cls.__name__)):
            cls(**{**cls.example, param: math.nan})


@pytest.mark.parametrize(("name", "cls"), PROTECTIONS)
def test_a_recipe_section_gives_the_value_and_refuses_an_unknown_key(name, cls):
    section = {k: v for k, v in cls.example.items() if k != "rules"}
    rules = tuple(cls.example.get("rules", ()))
    value = cls.from_section(section, rules, source="Recipe r.toml")
    assert value == cls(**cls.example)
    assert Protection.from_manifest(value.to_manifest()) == value
    with pytest.raises(ParameterError) as e:
        cls.from_section({**section, "colour": 1}, rules, source="Recipe r.toml")
    _one_line(e, "Recipe r.toml: ", f"[{name}] has unknown key 'colour'; it takes ")


@pytest.mark.parametrize(("name", "cls"), PROTECTIONS)
def test_apply_gives_a_result_the_protection_summarises(name, cls):
    value = cls(**cls.example)
    result = _apply(value)
    safe, line = value.verdict(result)
    assert isinstance(safe, bool) and line and "\n" not in line
    rows = value.summary(result)
    assert rows[-1][0] == "time" and all(isinstance(a, str) and isinstance(b, str) for a, b in rows)
    assert value.headline(result) and json.dumps(result.to_dict(), allow_nan=True)


def test_the_registry_is_the_methods_one_and_refuses_a_name_twice():
    from sdckit.core.registry import Registry
    from sdckit.tabular.protection import register

    @dataclasses.dataclass(frozen=True)
    class Copy(CellSuppression):
        pass

    with pytest.raises(TypeError, match="protection name 'suppression' is registered twice"):
        register(Copy)
    with pytest.raises(TypeError, match="must be a snake_case name"):
        register(type("Bad", (Protection,), {"name": "Cell Suppression"}))
    methods = Registry("method")  # the rule core.method.register applies (a fresh one: nothing leaks)
    methods.register(type("M1", (), {"name": "suppression"}))
    with pytest.raises(TypeError, match="method name 'suppression' is registered twice"):
        methods.register(type("M2", (), {"name": "suppression"}))
    assert protections()["suppression"] is CellSuppression


# ---------------------------------------------------------------------- apply = the family's function
def test_suppression_apply_is_suppress_and_the_hand_worked_pattern():
    table = table2d([[10, 20], [30, 40]])
    rules = [Manual(cells=(("r0", "c0"),))]
    for method in ("optimal", "fast"):
        result = CellSuppression(rules, method=method).apply(table)
        expected = suppress(table, rules, method=method)
        pd.testing.assert_frame_equal(result.cells, expected.cells)
        # by hand: r0c0 is disclosed by its row and column unless a rectangle of interior cells
        # is suppressed (cost 20 + 30 + 40 = 90 < any pattern through the margins, e.g. 30 + 40 + 100)
        status = result.cells.set_index(["r", "c"])["status"]
        assert status[("r0", "c0")] == "primary"
        assert sorted(status[status == "secondary"].index) == [("r0", "c1"), ("r1", "c0"), ("r1", "c1")]
        assert CellSuppression(rules, method=method).verdict(result) == (True, "safe: 1 of 1 primary cells protected")


def test_rounding_apply_is_round_table():
    table = table2d([[1, 4], [6, 9]])
    rules = [MinFrequency(6)]  # every cell has 5 contributors: all sensitive
    result = ControlledRounding(5, rules=rules).apply(table)
    expected = round_table(table, 5, rules=rules)
    pd.testing.assert_frame_equal(result.cells, expected.cells)
    assert np.allclose(result.cells["rounded"] % 5, 0) and result.additive
    rnd = ControlledRounding(5, method="random", seed=SEED).apply(table)
    assert rnd.cells["rounded"].tolist() == round_table(table, 5, method="random", seed=SEED).cells["rounded"].tolist()


def test_adjustment_apply_is_adjust_table():
    table = table2d([[10, 20], [30, 40]])
    rules = [Manual(cells=(("r0", "c0"),))]
    result = TabularAdjustment(rules, cost="inverse").apply(table)
    expected = adjust_table(table, rules, cost="inverse")
    pd.testing.assert_frame_equal(result.cells, expected.cells)
    # by hand: the primary moves by its level (10% of 10 = 1), the table stays additive
    cells = result.cells.set_index(["r", "c"])
    assert abs(cells.loc[("r0", "c0"), "change"]) >= 1 - 1e-9
    assert np.isclose(cells.loc[("r0", "Total"), "adjusted"], cells.loc[("r0", "c0"), "adjusted"] + cells.loc[("r0", "c1"), "adjusted"])


def test_cell_key_apply_is_cell_key_counts():
    records = _records()
    result = CellKey(record_key="rkey", D=3, V=2, js=1).apply(records, ["region", "sex"])
    expected = cell_key_counts(records, ["region", "sex"], "rkey", ptable(3, 2, js=1))
    pd.testing.assert_frame_equal(result.cells, expected)
    assert list(result.published.columns) == ["region", "sex", "n_pert"]
    seeded = CellKey(seed=SEED, D=3, V=2, js=1).apply(records, ["region", "sex"])
    keyed = records.assign(k=record_keys(len(records), SEED))
    assert seeded.cells["n_pert"].tolist() == cell_key_counts(keyed, ["region", "sex"], "k", ptable(3, 2, js=1))["n_pert"].tolist()
    assert SEED not in json.dumps(seeded.to_dict())
    with pytest.raises(ParameterError, match="'fp' is for magnitude tables"):
        CellKey(record_key="rkey", D=3, V=2, fp=10).apply(records, ["region", "sex"])


# ---------------------------------------------------------------------- the recipe and the CLI
def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.toml"
    path.write_text('[table]\ninput = "x.csv"\ndimensions = ["a"]\n' + text)
    return path


def test_recipe_reads_the_protection_through_the_registry(tmp_path):
    recipe = load_table_recipe(_recipe(tmp_path, '[[rule]]\ntype = "p"\np = 10\n[protection]\nmethod = "rounding"\n'
                                                 '[rounding]\nbase = 5\ntime_limit = 30\n'))
    assert recipe.protection == ControlledRounding(5, rules=(PPercent(10),), time_limit=30)
    assert recipe.to_dict()["rounding"] == {"base": 5, "method": "controlled", "mip_gap": 0.01, "time_limit": 30}
    plain = load_table_recipe(_recipe(tmp_path, "[suppression]\nmethod = \"fast\"\n"))
    assert plain.protection == CellSuppression(method="fast")
    d = plain.to_dict()  # where manifests had the suppression's parameters, and its own section
    assert (d["method"], d["cost"], d["time_limit"]) == ("fast", "value", None) and d["suppression"]["method"] == "fast"


@pytest.mark.parametrize("text, culprit", [
    ('[protection]\nmethod = "suppression"\nmthod = "fast"\n', "[protection] has unknown key 'mthod'; it takes method."),
    ('[protection]\nmethod = "rounding"\n[rounding]\nbase = 5\nmip_gap = 1\n',
     "[rounding] the 'mip_gap' parameter of ControlledRounding must be a float in [0, 1). Got 1 instead."),
    ('[protection]\nmethod = "cell_key"\n[cell_key]\nrecord_key = "k"\ndigits = 0\n',
     "[cell_key] the 'digits' parameter of CellKey must be an int >= 1. Got 0 instead."),
    ('[suppression]\ntime_limit = 0\n', "[suppression] the 'time_limit' parameter of CellSuppression must be None or"),
])
def test_recipe_with_a_bad_protection_key_fails_on_one_line(tmp_path, text, culprit):
    with pytest.raises(ParameterError) as e:
        load_table_recipe(_recipe(tmp_path, text))
    _one_line(e, "r.toml: ", culprit)


def test_the_cli_prints_any_result_through_its_protection():
    source = (ROOT / "src" / "sdckit" / "cli" / "table.py").read_text()
    assert "__name__" not in source and "Result" not in source
