"""Privacy budgets that a copy or a typo cannot reset or burn (issue 27, part 2).

The attack: a budget kept per *file* is fresh for the same records with one more newline, under
another name, exported to Parquet, or with the recipe in another folder — so the same people are
released again and again and the releases averaged. The ledger now keys a data set by its records
and lives in one per-user place. A recipe that fails its checks spends nothing and fixes no
budget; ledger and state files are private (0600) whatever the umask.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_helpers import write_dp_recipe

from sdckit.cli import main
from sdckit.dp.ledger import data_set_key, default_ledger_path, file_key, ledger_accountant
from sdckit.dp.mechanisms import Laplace
from sdckit.io import read



def _frame() -> pd.DataFrame:
    """Ints, floats, strings and missing values (a missing int makes the CSV column float)."""
    return pd.DataFrame({
        "x": np.linspace(0.0, 10.0, 12),
        "age": [30, 41, None, 25, 63, 30, 41, 52, 19, 77, 30, 44],
        "town": ["a", "b, c", None, "d", 'e "q"', "a", "b, c", "f", "g", "h", "a", "i"],
        "n": np.arange(12),
    })


def _recipe(folder: Path, data: str, *, budget: str = '[budget]\nepsilon = "3"', epsilon: str = "1.0",
            name: str = "recipe") -> str:
    return write_dp_recipe(folder / f"{name}.toml", data, budget=budget, epsilon=epsilon)


def _cli(capsys, *args: str) -> tuple[int, str]:
    """``sdckit ARGS`` in this process: (exit status, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code)
    return code, capsys.readouterr().err


# ------------------------------------------------------------------ the key of a data set
def test_the_key_is_the_records_whatever_the_file(tmp_path):
    frame = _frame()
    frame.to_csv(tmp_path / "a.csv", index=False)
    base = data_set_key(read(tmp_path / "a.csv"))
    text = (tmp_path / "a.csv").read_text()
    variants = {
        "copy.csv": text,
        "crlf.csv": text.replace("\n", "\r\n"),
        "no-newline.csv": text.rstrip("\n"),
        "two-newlines.csv": text + "\n",
        "shuffled.csv": frame.sample(frac=1.0, random_state=3).to_csv(index=False),
        "columns.csv": frame[["town", "n", "x", "age"]].to_csv(index=False),
        "quoted.csv": frame.to_csv(index=False, quoting=csv.QUOTE_ALL),
        "decimals.csv": frame.to_csv(index=False, float_format="%.17g"),
    }
    for name, content in variants.items():
        (tmp_path / name).write_text(content, newline="")
        assert data_set_key(read(tmp_path / name)) == base, name
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress(text.encode()))
    read(tmp_path / "a.csv").to_parquet(tmp_path / "export.parquet")  # the CSV's Parquet export
    typed = frame.astype({"age": "Int64", "town": "string", "n": "int32"})
    typed.to_parquet(tmp_path / "typed.parquet")  # the same records, other types (NA ints, strings)
    for name in ("a.csv.gz", "export.parquet", "typed.parquet"):
        assert data_set_key(read(tmp_path / name)) == base, name
    assert file_key(tmp_path / "a.csv") != file_key(tmp_path / "crlf.csv")  # what the old key saw


def test_other_records_have_other_keys():
    frame = _frame()
    base = data_set_key(frame)
    one_value = frame.copy()
    one_value.loc[3, "age"] = 26
    missing = frame.copy()
    missing.loc[0, "town"] = None
    dropped_duplicate = frame.drop(index=10)  # a repeated record is a record: the multiset counts
    renamed = frame.rename(columns={"n": "m"})
    text_nan = frame.copy()
    text_nan.loc[2, "town"] = "nan"  # the text 'nan' is not a missing value
    keys = {data_set_key(f) for f in (one_value, missing, dropped_duplicate, renamed, text_nan)}
    assert base not in keys and len(keys) == 5


# ------------------------------------------------------------------ the attack, end to end
def test_copies_newlines_parquet_and_other_folders_share_one_budget(tmp_path, capsys):
    pd.DataFrame({"x": np.linspace(0.0, 10.0, 60)}).to_csv(tmp_path / "people.csv", index=False)
    recipe = _recipe(tmp_path, "people.csv")
    assert [_cli(capsys, "protect", recipe)[0] for _ in range(3)] == [0, 0, 0]  # 3 x epsilon 1: spent

    text = (tmp_path / "people.csv").read_text()
    (tmp_path / "copy.csv").write_text(text)
    (tmp_path / "newline.csv").write_text(text + "\n")
    read(tmp_path / "people.csv").to_parquet(tmp_path / "people.parquet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(tmp_path / "people.csv", elsewhere / "people.csv")
    attempts = [_recipe(tmp_path, data, name=f"r{i}") for i, data in enumerate(
        ["copy.csv", "newline.csv", "people.parquet"])]
    attempts.append(_recipe(elsewhere, "people.csv"))
    for attempt in attempts:
        code, err = _cli(capsys, "protect", attempt)
        assert code == 2 and "exceed the privacy budget" in err, (attempt, err)
    (entry,) = json.loads(default_ledger_path().read_text())["data_sets"].values()
    assert entry["spent"] == "3" and len(entry["spends"]) == 3


def test_a_named_ledger_is_shared_and_the_legacy_one_is_not_left_behind(tmp_path, capsys):
    office = tmp_path / "office" / "ledger.json"
    pd.DataFrame({"x": np.linspace(0.0, 10.0, 60)}).to_csv(tmp_path / "people.csv", index=False)
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(tmp_path / "people.csv", first / "people.csv")
    recipe = _recipe(first, "people.csv", budget=f'[budget]\nepsilon = "1"\nledger = "{office}"')
    assert _cli(capsys, "protect", recipe)[0] == 0
    second = _recipe(tmp_path, "people.csv", budget='[budget]\nepsilon = "1"')
    code, err = _cli(capsys, "protect", second, "--ledger", str(office))
    assert code == 2 and "exceed the privacy budget" in err
    assert not default_ledger_path().exists()  # the office ledger took both

    # a ledger an earlier sdckit kept beside the recipe (keyed by the file hash) is honoured
    legacy = tmp_path / "sdckit-ledger.json"
    with ledger_accountant(legacy, file_key(tmp_path / "people.csv"), "1") as accountant:
        accountant.spend(1, "an earlier release")
    code, err = _cli(capsys, "protect", second)
    assert code == 2 and "earlier sdckit" in err and "--ledger" in err  # never silently a fresh budget
    code, err = _cli(capsys, "protect", second, "--ledger", str(legacy))
    assert code == 2 and "exceed the privacy budget" in err
    assert not default_ledger_path().exists()


# ------------------------------------------------------------------ a failed recipe spends nothing
@pytest.mark.parametrize("budget, epsilon", [("", "1e300"), ('[budget]\nepsilon = "1e300"', "1.0")])
def test_a_huge_epsilon_is_refused_as_too_large_and_locks_nothing(tmp_path, capsys, budget, epsilon):
    pd.DataFrame({"x": np.linspace(0.0, 10.0, 60)}).to_csv(tmp_path / "people.csv", index=False)
    code, err = _cli(capsys, "protect", _recipe(tmp_path, "people.csv", budget=budget, epsilon=epsilon))
    assert code == 2 and "too large" in err and "2**-50" not in err and "10**6" in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300  # no 301-digit number
    assert not default_ledger_path().exists()
    code, _ = _cli(capsys, "protect", _recipe(tmp_path, "people.csv", budget=""))
    assert code == 0  # the data set is not locked out of DP
    (entry,) = json.loads(default_ledger_path().read_text())["data_sets"].values()
    assert entry["epsilon"] == "1" and entry["spent"] == "1"


def test_a_recipe_failing_its_checks_on_the_data_spends_nothing(tmp_path, capsys):
    pd.DataFrame({"x": np.linspace(0.0, 10.0, 60), "y": np.arange(60.0)}).to_csv(tmp_path / "people.csv", index=False)
    recipe = _recipe(tmp_path, "people.csv")
    text = Path(recipe).read_text().replace('confidential = ["x"]', 'confidential = ["x", "y"]')
    Path(recipe).write_text(text)  # y has no bounds: LaplaceNoise refuses it before charging
    code, err = _cli(capsys, "protect", recipe)
    assert code == 2 and "bounds" in err
    assert not default_ledger_path().exists()


def test_the_mechanism_says_too_large_not_too_small():
    with pytest.raises(Exception, match="too large") as info:
        Laplace(epsilon=1e300, sensitivity=10.0).randomise(np.array([1.0]), np.random.default_rng(0))
    assert "2**-50" not in str(info.value)


# ------------------------------------------------------------------ owner-only files
def test_ledger_and_state_files_are_private_whatever_the_umask(tmp_path):
    from query_helpers import add_analyst, make_data, write_config
    from sdckit.query.service import Service

    make_data(tmp_path)
    old = os.umask(0)
    try:
        ledger = tmp_path / "book" / "ledger.json"
        with ledger_accountant(ledger, "k", "1") as accountant:
            accountant.spend(0.5, "one")
        config = write_config(tmp_path)
        service = Service(config)  # state.db and its lock
        add_analyst(config, "alice", "dp", "1")
        files = [ledger, ledger.with_name("ledger.json.lock"),
                 *(f for f in tmp_path.iterdir() if f.name.startswith("state.db"))]
        modes = {f.name: f.stat().st_mode & 0o777 for f in files}
        assert {"state.db", "state.db-wal", "state.db-shm", "state.db.lock"} <= set(modes)
        assert set(modes.values()) == {0o600}, modes
        assert (ledger.parent.stat().st_mode & 0o777) == 0o700
        service.close()
        ledger.chmod(0o660)  # an office shares its ledger with a group: a charge keeps that
        with ledger_accountant(ledger, "k", "1") as accountant:
            accountant.spend(0.25, "two")
        assert ledger.stat().st_mode & 0o777 == 0o660
    finally:
        os.umask(old)


def test_the_default_ledger_is_per_user(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / ".local" / "share" / "sdckit" / "ledger.json"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_ledger_path() == tmp_path / "data" / "sdckit" / "ledger.json"
    monkeypatch.setenv("SDCKIT_LEDGER", str(tmp_path / "office.json"))
    assert default_ledger_path() == tmp_path / "office.json"


_CELL = st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: round(v, 3)),
                  st.text("abc ,\"é", min_size=1, max_size=4).map(lambda t: "t" + t))


@settings(max_examples=12, deadline=None)
@given(data=st.data(), rows=st.integers(2, 8), kinds=st.lists(st.sampled_from(["int", "float", "text", "mixed"]),
                                                              min_size=1, max_size=4))
def test_any_frame_keeps_its_key_through_csv_shuffles_and_parquet(tmp_path_factory, data, rows, kinds):
    folder = tmp_path_factory.mktemp("key")
    cells = {"int": st.one_of(st.none(), st.integers(-1000, 1000)), "float": _CELL.filter(lambda v: not isinstance(v, str)),
             "text": st.one_of(st.none(), st.text("abc ,\"é", min_size=1, max_size=4).map(lambda t: "t" + t)),
             "mixed": _CELL}
    frame = pd.DataFrame({f"c{i}": [data.draw(cells[k]) for _ in range(rows)] for i, k in enumerate(kinds)})
    frame.to_csv(folder / "a.csv", index=False)
    base = data_set_key(read(folder / "a.csv"))
    order = data.draw(st.permutations(range(rows)))
    columns = data.draw(st.permutations(list(frame.columns)))
    text = frame.iloc[list(order)][columns].to_csv(index=False, quoting=data.draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])))
    (folder / "b.csv").write_text(text.replace("\n", data.draw(st.sampled_from(["\n", "\r\n"]))), newline="")
    read(folder / "a.csv").to_parquet(folder / "a.parquet")
    assert data_set_key(read(folder / "b.csv")) == base
    assert data_set_key(read(folder / "a.parquet")) == base


def test_the_key_follows_its_documented_recipe_with_no_library_hash():
    """An oracle in plain Python (struct, hashlib): numbers' float64 bits through SplitMix64, texts'
    BLAKE2b-64, columns chained by name, row hashes sorted, SHA-256 — so a pandas or numpy upgrade
    cannot change a data set's key and hand it a fresh budget."""
    import hashlib
    import struct

    mask = 2**64 - 1
    odd = 0x9E3779B97F4A7C15

    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def number(v):
        v = float("nan") if v is None else float(v) + 0.0
        return mix(struct.unpack("<Q", struct.pack("<d", v))[0] ^ odd)

    def text(v):
        raw = "\x00NA" if v is None else v
        return int.from_bytes(hashlib.blake2b(raw.encode(), digest_size=8).digest(), "little")

    frame = pd.DataFrame({"town": ["a", None, "b", "a"], "age": [30, None, -0.0, 30], "x": [0.5, 1.5, 2.5, 0.5]})
    rows = []
    for town, age, x in zip(["a", None, "b", "a"], [30, None, 0.0, 30], frame.x):
        h = 0
        for part in (number(age), text(town), number(x)):  # by name: age, town, x
            h = mix((h * odd + part) & mask)
        rows.append(h)
    digest = hashlib.sha256(json.dumps(["age", "town", "x"]).encode() + b"\x00")
    digest.update(b"".join(struct.pack("<Q", h) for h in sorted(rows)))
    assert data_set_key(frame) == "records-sha256:" + digest.hexdigest()
