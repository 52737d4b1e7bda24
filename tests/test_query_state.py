"""The state database (analysts, key hashes, exact budgets, audit log) and `sdckit analyst`."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from fractions import Fraction

import pytest

from query_helpers import make_data, write_config
from sdckit.core.errors import ParameterError
from sdckit.query.state import SCRYPT, BudgetRefused, State


@pytest.fixture()
def state(tmp_path):
    return State(tmp_path / "state.db")


def test_only_a_salted_scrypt_hash_of_the_key_is_stored(state, tmp_path):
    key = state.add_analyst("ann", "dp", 1.0)
    key_id, secret = key.split(".")
    assert len(secret) >= 43  # 32 bytes of OS entropy, url-safe base64
    raw = (tmp_path / "state.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("state.db-*"))
    assert secret.encode() not in raw
    salt, stored = sqlite3.connect(tmp_path / "state.db").execute(
        "SELECT salt, key_hash FROM analysts WHERE name = 'ann'").fetchone()
    assert stored == hashlib.scrypt(key.encode(), salt=salt, maxmem=64 * 2**20, **SCRYPT)
    assert state.authenticate(key).name == "ann"
    assert state.authenticate(key) is not None  # the second check comes from memory
    for wrong in (None, "", key + "x", key_id + ".nope", "nodot", key.replace(key_id, "0" * 16)):
        assert state.authenticate(wrong) is None
    other = state.add_analyst("ben", "restricted")
    assert other != key and state.authenticate(other).mode == "restricted"


def test_the_budget_is_exact_and_a_hard_cap(state):
    state.add_analyst("ann", "dp", "1")
    for _ in range(10):
        state.charge("ann", Fraction(1, 10), "q", "{}")
    assert state.analyst("ann").epsilon_remaining == 0  # ten float 0.1 would not sum to 1
    with pytest.raises(BudgetRefused) as info:
        state.charge("ann", Fraction(1, 10**9), "q", "{}")
    assert info.value.remaining == 0 and "remains" in str(info.value)
    assert sum(state.ledger("ann")) == state.analyst("ann").epsilon_spent == 1
    assert [r["decision"] for r in state.audit_log("ann")][-2:] == ["charged", "refused: budget"]


def test_concurrent_charges_never_pass_the_budget(state):
    """40 threads, 5 charges of 1/7 each against a budget of 2: exactly 14 go through."""
    state.add_analyst("ann", "dp", "2")
    done = []

    def worker() -> None:
        for _ in range(5):
            try:
                state.charge("ann", Fraction(1, 7), "q", "{}")
                done.append(1)
            except BudgetRefused:
                pass

    threads = [threading.Thread(target=worker) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 14
    assert state.analyst("ann").epsilon_spent == Fraction(2) == sum(state.ledger("ann"))


def test_a_second_process_sees_and_respects_the_charges(tmp_path):
    """Two State objects (as two server processes would) share one cap through BEGIN IMMEDIATE."""
    a, b = State(tmp_path / "s.db"), State(tmp_path / "s.db")
    a.add_analyst("ann", "dp", "0.3")
    a.charge("ann", Fraction(2, 10), "q", "{}")
    with pytest.raises(BudgetRefused):
        b.charge("ann", Fraction(2, 10), "q", "{}")
    b.charge("ann", Fraction(1, 10), "q", "{}")
    assert a.analyst("ann").epsilon_remaining == 0


@pytest.mark.parametrize("args, culprit", [
    (("bad name", "dp", 1), "NAME"),
    (("ann", "both", 1), "'--mode'"),
    (("ann", "dp", None), "'--epsilon'"),
    (("ann", "dp", -1), "'epsilon'"),
    (("ann", "dp", "abc"), "'epsilon'"),
    (("ann", "restricted", 1), "leave out '--epsilon'"),
])
def test_bad_analysts_are_refused_naming_the_option(state, args, culprit):
    with pytest.raises(ParameterError) as info:
        state.add_analyst(*args)
    assert culprit in str(info.value)


def test_an_analyst_name_is_unique(state):
    state.add_analyst("ann", "dp", 1)
    with pytest.raises(ParameterError, match="exists already"):
        state.add_analyst("ann", "dp", 2)
    with pytest.raises(ParameterError, match="No analyst is called 'zed'"):
        state.analyst("zed")


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from sdckit.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_analyst_cli_add_list_budget_log(tmp_path, capsys):
    make_data(tmp_path)
    config = str(write_config(tmp_path))
    code, out, _ = _cli(capsys, "analyst", "add", config, "ann", "--epsilon", "0.5", "--mode", "dp")
    assert code == 0
    key = out.strip()
    assert out == key + "\n" and "." in key  # the key alone on stdout
    state = State(tmp_path / "state.db")
    assert state.authenticate(key).name == "ann"
    state.charge("ann", Fraction(1, 8), "SELECT COUNT(*) FROM census", "{}")
    assert "epsilon total 0.5, spent 0.125, remaining 0.375" in _cli(capsys, "analyst", "budget", config, "ann")[1]
    listed = _cli(capsys, "analyst", "list", config)[1]
    assert "ann" in listed and "0.375" in listed
    log = _cli(capsys, "analyst", "log", config, "ann", "--json")[1]
    assert '"decision": "charged"' in log and "SELECT COUNT(*) FROM census" in log
    code, out, err = _cli(capsys, "analyst", "add", config, "bob", "--mode", "dp")
    assert code == 2 and "'--epsilon'" in err and out == ""
    code, _, err = _cli(capsys, "analyst", "add", config, "bob", "--mode", "dp", "--epsilon", "1", "--tables", "nowhere")
    assert code == 2 and "'nowhere'" in err
    code, _, err = _cli(capsys, "analyst", "budget", config, "zed")
    assert code == 2 and "No analyst is called 'zed'" in err


def test_serve_and_query_commands_name_bad_input(tmp_path, capsys):
    code, _, err = _cli(capsys, "serve", str(tmp_path / "missing.toml"))
    assert code == 2 and "does not exist" in err
    make_data(tmp_path)
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace("min_query_set = 5", "min_query_set = -1"))
    code, _, err = _cli(capsys, "serve", str(config))
    assert code == 2 and "'min_query_set'" in err and "Traceback" not in err
    code, _, err = _cli(capsys, "query", "--url", "http://127.0.0.1:9", "--key-file", str(tmp_path / "none.key"),
                        "SELECT COUNT(*) FROM census")
    assert code == 2 and "'--key-file'" in err
    (tmp_path / "k.key").write_text("abc.def\n")
    code, _, err = _cli(capsys, "query", "--url", "http://127.0.0.1:9", "--key-file", str(tmp_path / "k.key"),
                        "SELECT COUNT(*) FROM census")
    assert code == 2 and "cannot be reached" in err


def test_restricted_answers_stop_when_the_data_changed_since_they_were_audited(tmp_path):
    """The auditor replays answered queries on the data; on other data that replay would be
    wrong, so the service refuses restricted answers (fail closed); dp answers go on."""
    from sdckit.query.service import Service

    frame = make_data(tmp_path)
    config = write_config(tmp_path)
    state = State(tmp_path / "state.db")
    bob = state.add_analyst("bob", "restricted")
    ann = state.add_analyst("ann", "dp", 1)
    service = Service(config)
    assert service.query(bob, {"sql": "SELECT COUNT(*) FROM census WHERE age < 50"})[0] == 200
    service.close()
    service = Service(config)  # same data: the history replays
    assert service.query(bob, {"sql": "SELECT COUNT(*) FROM census WHERE age < 40"})[0] == 200
    service.close()
    frame.assign(income=frame.income + 1).to_csv(tmp_path / "census.csv", index=False)
    service = Service(config)
    status, body = service.query(bob, {"sql": "SELECT COUNT(*) FROM census WHERE age < 30"})
    assert status == 403 and "changed since queries on it were answered" in body["error"]
    assert service.query(ann, {"sql": "SELECT COUNT(*) FROM census", "epsilon": 0.5})[0] == 200
    service.close()


# ------------------------------------------------------------------ auth cache, group commit
def test_scrypt_runs_once_per_key_and_a_changed_or_removed_key_is_not_served_from_memory(state, tmp_path, monkeypatch):
    import sdckit.query.state as state_module

    key = state.add_analyst("ann", "dp", "1")
    calls = []
    real = state_module.hash_key
    monkeypatch.setattr(state_module, "hash_key", lambda k, s: calls.append(1) or real(k, s))
    assert [state.authenticate(key).name for _ in range(5)] == ["ann"] * 5
    assert len(calls) == 1  # then from memory
    assert state.authenticate(key + "x") is None and len(calls) == 2  # a wrong key is always checked
    assert key not in repr(state._verified) and all(len(d) == 32 for d in state._verified)  # SHA-256, never the key
    con = sqlite3.connect(tmp_path / "state.db")
    con.execute("UPDATE analysts SET key_hash = ? WHERE name = 'ann'", (b"\0" * 32,))  # the key was changed
    con.commit()
    assert state.authenticate(key) is None and len(calls) == 3
    assert state.authenticate(key) is None
    con.execute("DELETE FROM analysts WHERE name = 'ann'")  # the analyst was removed
    con.commit()
    assert state.authenticate(key) is None
    con.close()


def test_a_group_commit_charges_each_against_the_total_left_by_the_ones_before(state):
    """One transaction, four charges: the third would pass the budget and is refused with its
    audit row, the unknown analyst fails alone, the others are committed."""
    from sdckit.query.sqlite_store import PendingCharge

    state.add_analyst("ann", "dp", "1")
    batch = [PendingCharge("ann", Fraction(1, 2), "a", "{}"), PendingCharge("nobody", Fraction(1, 10), "b", "{}"),
             PendingCharge("ann", Fraction(2, 3), "c", "{}"), PendingCharge("ann", Fraction(1, 2), "d", "{}")]
    state._commit_charges(batch)
    assert all(r.done for r in batch)
    assert batch[0].error is None and batch[0].result[1].epsilon_spent == Fraction(1, 2)
    assert isinstance(batch[1].error, ParameterError) and "nobody" in str(batch[1].error)
    assert isinstance(batch[2].error, BudgetRefused) and batch[2].error.remaining == Fraction(1, 2)
    assert batch[3].error is None and batch[3].result[1].epsilon_spent == 1
    assert state.ledger("ann") == [Fraction(1, 2), Fraction(1, 2)]
    assert [(r["sql"], r["decision"]) for r in state.audit_log("ann")] == [
        ("a", "charged"), ("c", "refused: budget"), ("d", "charged")]
    assert batch[3].result[0] > batch[0].result[0]  # ledger ids in order


def test_concurrent_charges_share_commits_and_each_returns_after_its_own(state, monkeypatch):
    """While one commit is slow, the charges that arrive wait and go together in the next one:
    fewer transactions than charges, and none of them returns before its transaction commits."""
    state.add_analyst("ann", "dp", "100")
    batches, committed = [], []
    real = state._commit_charges

    def slow(batch):
        import time
        time.sleep(0.02)
        real(batch)
        batches.append(len(batch))
        committed.extend(id(r) for r in batch)

    monkeypatch.setattr(state, "_commit_charges", slow)
    returned_before_commit = []

    def worker() -> None:
        other = sqlite3.connect(state.path)  # another connection sees only committed rows
        for _ in range(5):
            charge_id, _ = state.charge("ann", Fraction(1, 10), "q", "{}")
            if other.execute("SELECT COUNT(*) FROM charges WHERE id = ?", (charge_id,)).fetchone()[0] != 1:
                returned_before_commit.append(charge_id)
        other.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(batches) == 40 and len(batches) < 40 and max(batches) > 1
    assert not returned_before_commit
    assert state.analyst("ann").epsilon_spent == 4 == sum(state.ledger("ann"))


# ------------------------------------------------------------------ lost and leaked keys
def test_rekey_replaces_the_key_and_keeps_the_budget_and_history(state):
    old = state.add_analyst("ann", "dp", "1")
    assert state.authenticate(old).name == "ann"  # now verified and held in memory
    state.charge("ann", Fraction(1, 4), "SELECT COUNT(*) FROM census", "{}")
    new = state.rekey("ann")
    assert new != old and new.split(".")[0] != old.split(".")[0]
    assert state.authenticate(old) is None  # the cached verification does not outlive the key
    ann = state.authenticate(new)
    assert ann.name == "ann" and ann.epsilon_spent == Fraction(1, 4)  # budget not reset
    assert [r["decision"] for r in state.audit_log("ann")][-1] == "key replaced"


def test_a_revoked_key_fails_and_the_name_cannot_be_re_added_with_a_fresh_budget(state):
    key = state.add_analyst("ann", "dp", "1")
    assert state.authenticate(key).name == "ann"
    state.charge("ann", Fraction(1, 2), "SELECT COUNT(*) FROM census", "{}")
    state.revoke("ann")
    assert state.authenticate(key) is None and state.revoked("ann")
    with pytest.raises(ParameterError, match="exists already"):
        state.add_analyst("ann", "dp", "1")  # would reset what ann has spent
    assert state.analyst("ann").epsilon_spent == Fraction(1, 2)
    again = state.rekey("ann")  # re-enabled, same budget
    assert not state.revoked("ann") and state.authenticate(again).epsilon_spent == Fraction(1, 2)
    assert [r["decision"] for r in state.audit_log("ann")][-2:] == ["key revoked", "key replaced"]
    for call in (state.rekey, state.revoke, state.revoked):
        with pytest.raises(ParameterError, match="No analyst is called 'zed'"):
            call("zed")


def test_analyst_cli_rekey_and_revoke(tmp_path, capsys):
    make_data(tmp_path)
    config = str(write_config(tmp_path))
    old = _cli(capsys, "analyst", "add", config, "ann", "--epsilon", "1", "--mode", "dp")[1].strip()
    code, out, _ = _cli(capsys, "analyst", "rekey", config, "ann")
    new = out.strip()
    assert code == 0 and out == new + "\n" and new != old  # the new key alone on stdout
    state = State(tmp_path / "state.db")
    assert state.authenticate(old) is None and state.authenticate(new).name == "ann"
    code, out, _ = _cli(capsys, "analyst", "revoke", config, "ann")
    assert code == 0 and out == "ann: key revoked\n" and State(tmp_path / "state.db").authenticate(new) is None
    assert "revoked" in _cli(capsys, "analyst", "list", config)[1]
    for command in ("rekey", "revoke"):
        code, out, err = _cli(capsys, "analyst", command, config, "zed")
        assert code == 2 and out == "" and "No analyst is called 'zed'" in err
