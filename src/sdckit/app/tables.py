"""The Tables screen's calls: a table built from the session's microdata — its dimensions with
their hierarchies (:mod:`sdckit.app.table_form`), counts or a response's sums, weighted or not —
its sensitive cells by the rules the user chose, protected by suppression, controlled rounding
or controlled tabular adjustment — or counts or sums perturbed by the cell key method — and the
pattern with the protection's verdict (issue 31, screen 5).

Every figure comes from :mod:`sdckit.tabular` — :meth:`~sdckit.tabular.Table.from_microdata`,
the rules, and the registered protection values (:mod:`sdckit.tabular.protection`:
``CellSuppression``, ``ControlledRounding``, ``TabularAdjustment``, ``CellKey``), whose ``apply``,
``figures`` and ``verdict`` are what ``sdckit table protect`` runs and prints — never from code
of the app's own. A table is
tabulated data: its cells are counts and sums, the very values a published table carries, so the
pattern shows them, with the suppressed ones marked; no record is shown.

The cell key method (Thompson, Broadfoot & Elazar 2013) needs a key per record: the workbench
draws them with :func:`sdckit.tabular.record_keys` from the stream :data:`CELL_KEY_STREAM` of the
session's seed (never shown), in the data set's record order, so every table of a session
perturbs the same cell the same way, and the keys are not the release's randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.app.session import Loaded
from sdckit.app.table_form import (CKM_COUNT_FIELDS, CKM_SUM_FIELDS, cell_key_parameters, dimension_trees,
                                   hierarchy_field, parameter_text)
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.random import parse_seed
from sdckit.tabular import Dominance, MinFrequency, PPercent, Table, record_keys
from sdckit.tabular.cellkey import CellKeyMeasures
from sdckit.tabular.hierarchy import DimensionHierarchy
from sdckit.tabular.protection import CellKey, CellSuppression, ControlledRounding, Protection, TabularAdjustment

__all__ = ["CELL_KEY_STREAM", "Dominance", "MinFrequency", "PPercent", "PROTECTIONS", "TableOutcome", "TableRequest",
           "code_counts", "dimension_choices", "keyed_records", "loaded_code_counts", "pattern", "protect_table",
           "request_form", "response_choices", "table_request", "weight_choices"]

#: A table has at most this many dimensions on the screen (more: write a table recipe).
MAX_DIMENSIONS = 3
#: A column with 2 to this many distinct codes can span a table.
MAX_CODES = 60
#: The protections the screen offers, by form value: label.
PROTECTIONS: dict[str, str] = {
    "suppression-optimal": "cell suppression, optimal (MILP with the audit's cuts)",
    "suppression-fast": "cell suppression, fast (heuristic, audited)",
    "rounding": "controlled rounding",
    "adjustment": "controlled tabular adjustment",
    "cell-key": "cell key method (counts or sums perturbed by record keys)",
}
#: Stream of the session's seed the cell key method's record keys are drawn from (not the release's).
CELL_KEY_STREAM = 0xCE11CE7
#: The column of record keys added to (a copy of) the dimensions' columns; never shown.
KEY_COLUMN = "__sdckit_record_key"
#: The published value of a protected cell by protection (suppression: the value, or ``x``).
SHOWN = {"rounding": "rounded", "adjustment": "adjusted"}
#: The cell key method's (original, published) columns: counts, weighted counts, sums.
CELL_KEY_SHOWN = {"count": ("n", "n_pert"), "weighted": ("weighted", "weighted_pert"), "sum": ("sum", "sum_pert")}
#: Status of a cell as the pattern colours it, by the protection's own status names.
STATUS_CLASS = {"safe": "safe", "primary": "primary", "secondary": "secondary", "sensitive": "primary",
                "adjusted": "secondary", "changed": "changed"}


@dataclass(frozen=True)
class TableRequest:
    """What the user asked for, checked: the dimensions (with their hierarchies: the text as
    typed, and the library's trees, one per dimension), the response (None: a frequency table),
    the weight, the sensitivity rules and the protection (with its rounding base, or the cell key
    method's parameters as a table recipe's ``[cell_key]`` names them)."""

    dimensions: tuple[str, ...]
    response: str | None
    rules: tuple[Any, ...]
    protection: str
    base: int = 3
    cell_key: tuple[tuple[str, Any], ...] = (("D", 3), ("V", 2.0), ("js", 1))
    weight: str | None = None
    hierarchies: tuple[tuple[str, str], ...] = ()  # (dimension, text as typed), the dimensions given one
    trees: tuple[DimensionHierarchy, ...] = field(default=(), repr=False, compare=False)

    def hierarchy_map(self) -> dict[str, DimensionHierarchy] | None:
        """``{dimension: hierarchy}`` for the library's calls (None: every dimension flat)."""
        return dict(zip(self.dimensions, self.trees)) if self.trees else None

    def value(self) -> Protection:
        """The registered protection value this request names (its own rules check it)."""
        if self.protection == "cell-key":
            return CellKey(record_key=KEY_COLUMN, **dict(self.cell_key))
        if self.protection.startswith("suppression"):
            return CellSuppression(self.rules, method=self.protection.split("-")[1])
        if self.protection == "rounding":
            return ControlledRounding(self.base, rules=self.rules)
        return TabularAdjustment(self.rules)

    def describe(self) -> str:
        """One line: the table and what protects it."""
        what = f"sum of {self.response}" if self.response else "counts"
        what += f" weighted by {self.weight}" if self.weight else ""
        what += f" by {' x '.join(self.dimensions)}"
        if self.hierarchies:
            what += " (hierarchies: " + ", ".join(
                f"{d} {' '.join(t.split())[:40]!r}" for d, t in self.hierarchies) + ")"
        if self.protection == "cell-key":
            given = ", ".join(f"{k}={parameter_text(v)}" for k, v in self.cell_key)
            return f"{what}; {PROTECTIONS[self.protection]}, {given} (no sensitivity rule applies)"
        rules = ", ".join(map(str, self.rules)) or "no rule"
        extra = f" to base {self.base}" if self.protection == "rounding" else ""
        return f"{what}; rules {rules}; {PROTECTIONS[self.protection]}{extra}"


@dataclass(frozen=True)
class TableOutcome:
    """A protected table as the screen shows it: the request, the library's result and verdict."""

    request: TableRequest
    result: Any = field(repr=False)
    safe: bool
    verdict: str
    figures: tuple[tuple[str, str], ...] = ()  # the protection's figures, as the CLI prints them
    disclosure: tuple[dict[str, Any], ...] = ()  # the cell key method's disclosure rows (cell_key_measures)


def code_counts(frame: pd.DataFrame) -> dict[str, int]:
    """The number of distinct codes (missing values left out) of each column of ``frame`` that is
    not a float column, over every record: what :func:`dimension_choices` chooses by."""
    return {str(name): int(frame[name].nunique(dropna=True)) for name in frame.columns
            if not pd.api.types.is_float_dtype(frame[name].dtype)}


def loaded_code_counts(loaded: Loaded) -> dict[str, int]:
    """:func:`code_counts` of the data set ``loaded``, counted once per data set (0.15-0.3 s on
    1e6 records): opening data makes a new :class:`~sdckit.app.session.Loaded`, counted anew. The
    table is built from the data set as opened, never from the protected release, so the steps
    applied do not change them."""
    return loaded.cached("code_counts", lambda: code_counts(loaded.frame))


def dimension_choices(frame: pd.DataFrame, roles: Mapping[str, str], counts: Mapping[str, int] | None = None) -> list[str]:
    """Columns that can span a table: not an identifier, household id or weight, not a float
    column, with 2 to :data:`MAX_CODES` distinct codes (``counts``: :func:`code_counts` of
    ``frame``, counted here when not given)."""
    counts = code_counts(frame) if counts is None else counts
    return [str(name) for name in frame.columns if str(name) in counts
            and roles.get(str(name)) not in ("identifier", "household", "weight")
            and 2 <= counts[str(name)] <= MAX_CODES]


def response_choices(frame: pd.DataFrame, roles: Mapping[str, str]) -> list[str]:
    """Numeric columns a table can sum (not identifiers, household ids or weights)."""
    return [n for n in weight_choices(frame, roles) if roles.get(n) != "weight"]


def weight_choices(frame: pd.DataFrame, roles: Mapping[str, str]) -> list[str]:
    """Numeric columns that can weight a table's records (not identifiers or household ids)."""
    return [str(n) for n in frame.columns if pd.api.types.is_numeric_dtype(frame[n].dtype)
            and not pd.api.types.is_bool_dtype(frame[n].dtype)
            and roles.get(str(n)) not in ("identifier", "household")]


def _number(form: Mapping[str, str], key: str, label: str, kind: type) -> Any:
    text = form.get(key, "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        noun = "a whole number" if kind is int else "a number"
        raise ParameterError(f"{label} must be {noun}; got {text!r}.") from None


def table_request(frame: pd.DataFrame, roles: Mapping[str, str], form: Mapping[str, str],
                  dimensions: Sequence[str], folder: Path | None = None,
                  counts: Mapping[str, int] | None = None) -> TableRequest:
    """The form's table, checked (one-line :class:`ParameterError` for anything wrong): 1 to
    :data:`MAX_DIMENSIONS` distinct dimensions of :func:`dimension_choices` with their
    hierarchies (:func:`~sdckit.app.table_form.dimension_trees`; ``folder``: where a relative
    hierarchy file is), a response of :func:`response_choices` or none, a weight of
    :func:`weight_choices` or none, the rules (their own parameter checks), a protection of
    :data:`PROTECTIONS`; a rule on sums (dominance, p%) needs a response; the cell key
    method's parameters (:func:`~sdckit.app.table_form.cell_key_parameters`) checked by the
    method itself; ``counts``: :func:`code_counts` of ``frame`` when known."""
    allowed = dimension_choices(frame, roles, counts)
    dims = tuple(dict.fromkeys(d for d in dimensions if d))
    if not dims:
        raise ParameterError("Choose at least one dimension (a column whose codes span the table).")
    if len(dims) > MAX_DIMENSIONS:
        raise ParameterError(f"Choose at most {MAX_DIMENSIONS} dimensions here; a larger table is a table recipe's work "
                             "(`sdckit table protect`).")
    for d in dims:
        if d not in allowed:
            raise ParameterError(f"Column {d!r} cannot span a table; choose among: {', '.join(allowed)}.")
    response = form.get("response", "").strip() or None
    if response is not None and response not in response_choices(frame, roles):
        raise ParameterError(f"Column {response!r} cannot be summed; choose a numeric column or counts.")
    if response is not None and response in dims:
        raise ParameterError(f"Column {response!r} is a dimension; it cannot be the response too.")
    weight = form.get("weight", "").strip() or None
    if weight is not None and (weight not in weight_choices(frame, roles) or weight in dims or weight == response):
        raise ParameterError(f"Column {weight!r} cannot weight the records; choose a numeric column that is neither "
                             "a dimension nor the response, or no weight.")
    protection = form.get("protection", "")
    if protection not in PROTECTIONS:
        raise ParameterError(f"Unknown protection {protection!r}; choose one of the list.")
    texts = {d: form.get(hierarchy_field(d), "") for d in dims}
    shape = {"hierarchies": tuple((d, t.strip()) for d, t in texts.items() if t.strip()), "weight": weight,
             "trees": dimension_trees(frame, dims, texts, folder)}
    if protection == "cell-key":  # no sensitivity rule applies: the rules' fields are not read
        given = cell_key_parameters(form, sums=response is not None)
        request = TableRequest(dims, response, (), protection, cell_key=tuple(given.items()), **shape)
        method = request.value()  # the method's own parameter rules
        if response is not None:
            method.sum_params()  # the flex function's rules, and its p-table solved
        return request
    rules: list[Any] = []
    n = _number(form, "min_frequency", "The minimum frequency", int)
    if n is not None:
        rules.append(MinFrequency(n))
    dom_n, dom_k = (_number(form, "dominance_n", "The dominance rule's n", int),
                    _number(form, "dominance_k", "The dominance rule's k", float))
    if (dom_n is None) != (dom_k is None):
        raise ParameterError("Give both n and k of the dominance rule, or neither.")
    p = _number(form, "p_percent", "The p% rule's p", float)
    if response is None and (dom_n is not None or p is not None):
        raise ParameterError("The dominance and p% rules look at contributions to sums: choose a response "
                             "column, or use the minimum frequency on counts.")
    if dom_n is not None:
        rules.append(Dominance(dom_n, dom_k))
    if p is not None:
        rules.append(PPercent(p))
    if not rules and protection != "rounding":
        raise ParameterError("Give at least one sensitivity rule: without one no cell is sensitive, "
                             "and there is nothing to suppress or adjust.")
    base = _number(form, "base", "The rounding base", int)
    if protection == "rounding" and (base is None or base < 2):
        raise ParameterError("The rounding base must be a whole number >= 2 (e.g. 3 or 5).")
    request = TableRequest(dims, response, tuple(rules), protection, 3 if base is None else base, **shape)
    request.value()  # the protection's own parameter rules
    return request


def keyed_records(frame: pd.DataFrame, columns: Sequence[str], seed: int | str, digits: int = 8) -> pd.DataFrame:
    """The ``columns`` of ``frame`` (the dimensions, the response and weight) and a record key
    per record (:data:`KEY_COLUMN`): :func:`sdckit.tabular.record_keys` of the stream
    :data:`CELL_KEY_STREAM` of ``seed``, in record order (the same keys for every table of the
    data set)."""
    stream = np.random.SeedSequence([parse_seed(seed), CELL_KEY_STREAM])
    keyed = frame[list(dict.fromkeys(columns))].copy()
    keyed[KEY_COLUMN] = record_keys(len(frame), stream, digits)
    return keyed


def protect_table(frame: pd.DataFrame, request: TableRequest, job: Job | None = None,
                  seed: int | str | None = None) -> TableOutcome:
    """Build the table, protect it with the request's protection value, and that value's
    verdict and figures (what ``sdckit table protect`` prints). ``job`` follows the stages (a cancel is
    honoured between them). The cell key method perturbs the table of the records keyed by
    :func:`keyed_records` of ``seed`` (the session's), and adds :func:`~sdckit.tabular.cell_key_measures`'
    figures and disclosure rows."""

    def stage(done: int, text: str) -> None:
        if job is not None:
            job.update(done, 3, text)

    if request.protection == "cell-key":
        if seed is None:
            raise DataError("The cell key method needs the session's seed for its record keys.")
        stage(0, "drawing the record keys")
        columns = [*request.dimensions, *(c for c in (request.response, request.weight) if c)]
        keyed = keyed_records(frame, columns, seed)
        stage(1, f"perturbing the {'sums' if request.response else 'counts'}")
        protection = request.value()
        result = protection.apply(keyed, list(request.dimensions), request.response, request.weight,
                                  request.hierarchy_map())
        stage(2, "the verdict")
        safe, verdict = protection.verdict(result)
        if result.measure != "count":  # sums: the protection's figures (no p-table of counts to disclose)
            stage(3, "done")
            return TableOutcome(request, result, safe, verdict, tuple(protection.figures(result)))
        m = dict(result.measures)
        disclosure = tuple(m.pop("disclosure"))
        measures = CellKeyMeasures(**m, disclosure=pd.DataFrame(list(disclosure)))
        figures = measures.summary()  # the protection's figures (CellKey.figures) and more
        figures += [(f"mean additivity gap over {d}", f"{gap:.3g}") for d, gap in measures.additivity.items()]
        stage(3, "done")
        return TableOutcome(request, result, safe, verdict, tuple(figures), disclosure)

    stage(0, "building the table")
    table = Table.from_microdata(frame, list(request.dimensions), request.hierarchy_map(), response=request.response,
                                 weight=request.weight)
    stage(1, "protecting it")
    protection = request.value()
    result = protection.apply(table)
    stage(2, "the verdict")
    safe, verdict = protection.verdict(result)
    stage(3, "done")
    return TableOutcome(request, result, safe, verdict, tuple(protection.figures(result)))


@dataclass(frozen=True)
class PatternCell:
    """One cell of the pattern: its text (the published value, or ``x`` when suppressed), its
    status (the colour) and the original value in a tooltip when the protection changed it."""

    text: str
    status: str
    title: str


def _published(row: pd.Series, request: TableRequest) -> tuple[str, str, str]:
    protection = request.protection
    kind = "sum" if request.response else "weighted" if request.weight else "count"
    value_column, shown_column = CELL_KEY_SHOWN[kind] if protection == "cell-key" else ("value", SHOWN.get(protection))
    value = row[value_column]
    original = f"{value:,.10g}"
    if protection.startswith("suppression"):
        status = str(row["status"])
        return ("x" if status in ("primary", "secondary") else original), status, f"{status}; value {original}"
    shown = row[shown_column]
    status = str(row["status"]) if "status" in row.index else "safe"
    if status == "safe" and shown != value:
        status = "changed"
    return f"{shown:,.10g}", STATUS_CLASS.get(status, "safe"), f"{status}; original {original}"


def pattern(outcome: TableOutcome) -> dict[str, Any]:
    """The protected table for the screen: with two dimensions a cross table (rows the first
    dimension's codes, columns the second's, totals and subtotals included), else one row per
    cell; ``depths``: the codes' depth in each hierarchy given (the total 0), to indent."""
    cells: pd.DataFrame = outcome.result.cells
    dims = list(outcome.request.dimensions)
    shown = [PatternCell(*_published(row, outcome.request)) for _, row in cells.iterrows()]
    statuses = sorted({c.status for c in shown} & set(STATUS_CLASS))
    given = dict(outcome.request.hierarchies)
    depths = {d: dict(zip(h.codes, map(int, h.depths()))) for d, h in zip(dims, outcome.request.trees) if d in given}
    if len(dims) != 2:
        rows = [([str(cells.iloc[i][d]) for d in dims], c) for i, c in enumerate(shown)]
        return {"kind": "list", "dimensions": dims, "rows": rows, "statuses": statuses, "depths": depths}
    first = list(dict.fromkeys(map(str, cells[dims[0]])))
    second = list(dict.fromkeys(map(str, cells[dims[1]])))
    grid = {(str(a), str(b)): c for a, b, c in zip(cells[dims[0]], cells[dims[1]], shown)}
    empty = PatternCell("", "empty", "no such cell")
    return {"kind": "cross", "dimensions": dims, "columns": second, "statuses": statuses, "depths": depths,
            "rows": [(code, [grid.get((code, col), empty) for col in second]) for code in first]}


def sensitive_count(outcome: TableOutcome) -> int:
    """How many cells the rules made sensitive (primary)."""
    cells = outcome.result.cells
    if "status" in cells.columns:
        return int(np.sum(cells["status"].isin(["primary", "sensitive"])))
    return 0


def request_form(request: TableRequest | None) -> dict[str, str]:
    """The Tables form's fields for ``request`` (what was asked last), or the defaults."""
    form = {"min_frequency": "3", "protection": "suppression-optimal", "base": "3"}
    form.update({key: default for key, (_, _, default) in {**CKM_COUNT_FIELDS, **CKM_SUM_FIELDS}.items()})
    if request is None:
        return form
    form.update({"min_frequency": "", "response": request.response or "", "protection": request.protection,
                 "base": str(request.base), "weight": request.weight or ""})
    form.update({hierarchy_field(d): text for d, text in request.hierarchies})
    given = dict(request.cell_key)
    form.update({key: parameter_text(given[name]) for key, (name, _, _) in {**CKM_COUNT_FIELDS, **CKM_SUM_FIELDS}.items()
                 if name in given})
    for rule in request.rules:
        form.update({"min_frequency": str(rule.n)} if isinstance(rule, MinFrequency) else
                    {"dominance_n": str(rule.n), "dominance_k": f"{rule.k:g}"} if isinstance(rule, Dominance)
                    else {"p_percent": f"{rule.p:g}"})
    return form
