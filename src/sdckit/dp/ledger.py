"""The privacy ledger: one budget per data set, kept across releases (issue 19 item 8).

A budget that lives only as long as one call stops nothing: 200 releases at epsilon = 1 of the
same data, averaged, cut the error tenfold. The command line therefore keeps a ledger file — the
data protector's private record, never published — with one
:class:`~sdckit.dp.BudgetAccountant` per data set, keyed by the SHA-256 of the input file. Every
recipe run with a differentially private method opens the ledger under an exclusive lock, charges
the data set's accountant (before any noise is drawn) and writes it back, also when the run fails
after charging, so that a refused or failed release never gives budget back.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sdckit.core.atomic import write_text_atomic
from sdckit.core.errors import DataError, ParameterError
from sdckit.dp.accountant import BudgetAccountant, exact, exact_text

LEDGER_FORMAT = 1


def data_set_key(path: Path) -> str:
    """The ledger's key of a data set: the SHA-256 of its file (the ledger is private)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"ledger_format": LEDGER_FORMAT, "data_sets": {}}
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise DataError(f"The privacy ledger {str(path)!r} cannot be read as JSON; restore it from a backup.") from None
    if not isinstance(content, dict) or not isinstance(content.get("data_sets"), dict):
        raise DataError(f"The privacy ledger {str(path)!r} is not an sdckit ledger (no 'data_sets').")
    return content


@contextlib.contextmanager
def ledger_accountant(path: str | Path, key: str, epsilon: Any, delta: Any = 0,
                      label: str = "") -> Iterator[BudgetAccountant]:
    """The accountant of data set ``key`` in the ledger at ``path``, locked for the block.

    A data set seen for the first time gets a budget of ``(epsilon, delta)``; one already in the
    ledger keeps its own, and a different ``epsilon`` or ``delta`` is refused (a budget is
    fixed once; raising it is a decision taken by editing the ledger, not by a recipe). The
    ledger is written back when the block ends, whatever happened in it.
    """
    path = Path(path)
    total_eps = exact(epsilon, "the [budget] table", "epsilon")
    total_delta = exact(delta, "the [budget] table", "delta", positive=False, below_one=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        content = _read(path)
        stored = content["data_sets"].get(key)
        if stored is None:
            accountant = BudgetAccountant(total_eps, total_delta)
        else:
            accountant = BudgetAccountant.from_manifest(stored)
            if accountant.epsilon != total_eps or accountant.delta != total_delta:
                raise ParameterError(
                    f"The ledger gives this data set a budget of epsilon = {exact_text(accountant.epsilon)}, "
                    f"delta = {exact_text(accountant.delta)}; the recipe says epsilon = {exact_text(total_eps)}, "
                    f"delta = {exact_text(total_delta)}. A budget is fixed once: use the ledger's."
                )
        spent_before = (accountant.spent, accountant.spent_delta)
        try:
            yield accountant
        finally:
            if (accountant.spent, accountant.spent_delta) != spent_before or stored is None:
                entry = accountant.to_manifest()
                if label:
                    entry["data_set"] = label
                content["data_sets"][key] = entry
                write_text_atomic(path, json.dumps(content, indent=2) + "\n")
