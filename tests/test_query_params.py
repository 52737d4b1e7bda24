"""The query service's parameter rules (issue 29 item 3): the auditor, the interval audit, the state
database and the auditor's secret primes declare their rules and are checked by the one validator
(:mod:`sdckit.core.params`), in the one template, and tried at the bounds of every interval (a
closed bound accepted, an open bound and a step outside refused), not only with a wrong type."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.core.errors import ParameterError
from sdckit.query.audit import Auditor, IntervalAudit
from sdckit.query.audit.modp import random_prime
from sdckit.query.state import State


def _template(owner: str, name: str, rule: str) -> str:
    return rf"^The '{name}' parameter of {owner} must be {rule}\. Got .+ instead\.$"


def test_the_auditor_takes_k_and_n_from_one():
    assert Auditor(1, 1).n_records == 1  # the closed bounds
    Auditor(np.int64(3), np.int64(2))
    for n, k, culprit in ((0, 1, "n_records"), (1, 0, "min_query_set"), (True, 1, "n_records"), (2.0, 1, "n_records")):
        with pytest.raises(ParameterError, match=_template("Auditor", culprit, "an int >= 1")):
            Auditor(n, k)


def test_the_auditor_knows_two_kinds_of_answer():
    auditor = Auditor(10, 2)
    with pytest.raises(ParameterError, match=_template("Auditor.check", "kind", r"one of \{'count', 'sum'\}")):
        auditor.check([np.arange(10) < 5], "avg", None)


def test_the_interval_audit_takes_p_up_to_100_and_bounds_from_zero():
    values = np.array([1.0, 2.0, 3.0])
    IntervalAudit(values, (0, 10), 100, 2)  # both closed bounds: lo = 0, p = 100
    IntervalAudit(values, (0.0, float("inf")), 1e-9, 2)
    p_rule = _template("IntervalAudit", "p_percent", r"a float in \(0, 100\]")
    for p in (0, 100 + 1e-9, -1, "10", True, float("nan")):
        with pytest.raises(ParameterError, match=p_rule):
            IntervalAudit(values, (0, 10), p, 2)
    bounds_rule = _template("IntervalAudit", "bounds", r"a pair \(lo, hi\) with 0 <= lo < hi")
    for bounds in ((-1e-9, 10), (5, 5), (6, 5), (0, float("nan")), (0,), None, (0, 1, 2)):
        with pytest.raises(ParameterError, match=bounds_rule):
            IntervalAudit(values, bounds, 10, 2)


def test_the_state_database_takes_two_sync_modes(tmp_path):
    assert State(tmp_path / "a.db", "normal")._sync == "NORMAL"
    with pytest.raises(ParameterError, match=_template("State", "sync", r"one of \{'full', 'normal'\}")):
        State(tmp_path / "b.db", "FULL")
    assert not (tmp_path / "b.db").exists()  # refused before anything is written


def test_the_secret_primes_have_8_to_31_bits():
    assert 2**7 <= random_prime(8) < 2**8 and 2**30 <= random_prime(31) < 2**31  # both closed bounds
    assert random_prime.constraints["bits"].low == 8
    for bits in (7, 32, 31.0, "31"):
        with pytest.raises(ParameterError, match=_template("random_prime", "bits", r"an int in \[8, 31\]")):
            random_prime(bits)
