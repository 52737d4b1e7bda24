"""The command line keeps one privacy budget per data set in a ledger (issue 19 item 8).

The attack of the issue: the same data released again and again at epsilon = 1, the releases
averaged. With the ledger the CLI refuses a release once the data set's budget is spent.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ledger_helpers import write_dp_recipe

from sdckit.dp.ledger import default_ledger_path



def _project(tmp_path, budget: str = "", data: str = "people.csv", name: str = "release") -> str:
    if not (tmp_path / data).exists():
        pd.DataFrame({"x": np.linspace(0.0, 10.0, 60)}).to_csv(tmp_path / data, index=False)
    return write_dp_recipe(tmp_path / f"{name}.toml", data, budget=budget, name=name)


def _releases(cli, recipe, cwd, times):
    results = [cli("protect", recipe, cwd=cwd) for _ in range(times)]
    return [r.returncode for r in results], results


def test_repeated_releases_of_one_data_set_are_refused_once_the_budget_is_spent(tmp_path, cli):
    recipe = _project(tmp_path, '[budget]\nepsilon = "3"')
    codes, results = _releases(cli, recipe, tmp_path, 5)
    assert codes == [0, 0, 0, 2, 2]
    refusal = results[3].stderr.strip()
    assert len(refusal.splitlines()) == 1 and "budget" in refusal.lower() and "Traceback" not in refusal
    ledger = json.loads(default_ledger_path().read_text())
    (entry,) = ledger["data_sets"].values()
    assert entry["epsilon"] == "3" and entry["spent"] == "3" and len(entry["spends"]) == 3


def test_without_a_budget_table_a_data_set_is_released_once(tmp_path, cli):
    recipe = _project(tmp_path)
    codes, _ = _releases(cli, recipe, tmp_path, 2)
    assert codes == [0, 2]


def test_each_data_set_has_its_own_budget(tmp_path, cli):
    first = _project(tmp_path, '[budget]\nepsilon = "1"', data="a.csv", name="a")
    pd.DataFrame({"x": np.linspace(1.0, 9.0, 60)}).to_csv(tmp_path / "b.csv", index=False)
    second = _project(tmp_path, '[budget]\nepsilon = "1"', data="b.csv", name="b")
    assert cli("protect", first, cwd=tmp_path).returncode == 0
    assert cli("protect", second, cwd=tmp_path).returncode == 0
    assert cli("protect", first, cwd=tmp_path).returncode == 2
    assert len(json.loads(default_ledger_path().read_text())["data_sets"]) == 2


def test_a_budget_is_fixed_once(tmp_path, cli):
    assert cli("protect", _project(tmp_path, '[budget]\nepsilon = "2"'), cwd=tmp_path).returncode == 0
    result = cli("protect", _project(tmp_path, '[budget]\nepsilon = "5"'), cwd=tmp_path)
    assert result.returncode == 2 and "fixed once" in result.stderr


@pytest.mark.parametrize("budget, message", [
    ("[budget]\ndelta = 0", "needs 'epsilon'"),
    ('[budget]\nepsilon = "-1"', "epsilon"),
    ('[budget]\nepsilon = "1"\nspend = 2', "'spend'"),
    ("budget = 3", "[budget] must be a table"),
])
def test_bad_budget_tables_are_one_line_exit_2(tmp_path, cli, budget, message):
    result = cli("protect", _project(tmp_path, budget), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr


def test_a_damaged_ledger_is_refused_not_reset(tmp_path, cli):
    ledger = default_ledger_path()  # the per-user ledger (conftest: a temporary XDG_DATA_HOME)
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_text("{not json")
    result = cli("protect", _project(tmp_path, '[budget]\nepsilon = "3"'), cwd=tmp_path)
    assert result.returncode == 2 and "ledger" in result.stderr
    assert ledger.read_text() == "{not json"
