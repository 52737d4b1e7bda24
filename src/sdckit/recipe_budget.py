"""A recipe's privacy budget (issue 27 item 2): the ``[budget]`` table checked, and the ledger a
run charges — one per user unless the recipe or the command names another (DESIGN.md section 9)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdckit.core.errors import ParameterError, SdcError
from sdckit.core.method import Method
from sdckit.core.tomlfile import check_keys, file_error
from sdckit.dp.accountant import exact, exact_text
from sdckit.dp.ledger import default_ledger_path

BUDGET_KEYS = {"epsilon", "delta", "ledger"}
#: The name of the ledger an earlier sdckit kept beside the recipe.
LEDGER_NAME = "sdckit-ledger.json"


def holds_budget(method: Method) -> bool:
    """Whether a method takes the caller's privacy accountant (a differentially private one)."""
    return any(f.name == "accountant" for f in dataclasses.fields(method))


def parse_budget(source: Path, table: Any, methods: list[Method]) -> dict[str, Any] | None:
    """The ``[budget]`` table (the data set's total epsilon and delta, and the ledger file),
    checked; with differentially private methods and no table, the budget is what this recipe
    spends, so that the same data cannot be released again unless a budget says so.

    Every differentially private method's epsilon is checked here (at most
    :data:`~sdckit.dp.accountant.MAX_EPSILON`), before any data is read or the ledger touched.
    ``ledger`` is None unless the table names one (relative to the recipe): the run then uses
    the per-user ledger (:func:`~sdckit.dp.ledger.default_ledger_path`)."""
    spends = []
    for i, m in enumerate(methods, start=1):
        if holds_budget(m):
            try:
                spends.append(exact(m.epsilon, type(m).__name__, "epsilon"))
            except SdcError as exc:
                raise file_error(source, f"[[method]] number {i}: {exc}") from None
    if table is None:
        if not spends:  # no differentially private method
            return None
        table = {"epsilon": str(sum(spends))}
    if not isinstance(table, Mapping):
        raise file_error(source, "[budget] must be a table with 'epsilon' (and optionally 'delta', 'ledger').")
    check_keys(table, BUDGET_KEYS, "[budget]", source)
    if "epsilon" not in table:
        raise file_error(source, "[budget] needs 'epsilon': the total this data set may spend.")
    try:
        epsilon = exact_text(exact(table["epsilon"], "[budget]", "epsilon"))
        delta = exact_text(exact(table.get("delta", 0), "[budget]", "delta", positive=False, below_one=True))
    except SdcError as exc:
        raise file_error(source, str(exc)) from None
    ledger = table.get("ledger")
    if ledger is not None:
        if not isinstance(ledger, str) or not ledger.strip():
            raise file_error(source, f"[budget] 'ledger' must be a file path; got {ledger!r}.")
        ledger = (source.resolve().parent / Path(ledger).expanduser()).resolve()
    return {"epsilon": epsilon, "delta": delta, "ledger": ledger}


def ledger_path(budget: Mapping[str, Any], source: Path, ledger: str | Path | None = None) -> Path:
    """The privacy ledger a run of the recipe at ``source`` charges: ``ledger`` (the CLI's
    ``--ledger``), else the recipe's ``[budget] ledger`` (``budget``, as :func:`parse_budget`
    gave it), else the per-user one. A ledger an earlier sdckit kept beside the recipe is never
    silently left behind: with neither named, its presence is refused."""
    if ledger is not None:
        return Path(ledger).expanduser().resolve()
    if budget.get("ledger") is not None:
        return Path(budget["ledger"])
    default = default_ledger_path()
    legacy = source.parent / LEDGER_NAME
    if legacy.exists() and legacy.resolve() != default.resolve():
        raise ParameterError(
            f"{source}: an earlier sdckit kept this data's privacy ledger beside the recipe "
            f"({LEDGER_NAME}); the ledger is now one per user ({default}). Name it (--ledger {legacy} or "
            f"[budget] ledger = \"{LEDGER_NAME}\") or merge it into the per-user one, so that no budget "
            "starts again."
        )
    return default
