"""What one browser session of the workbench holds, and the library calls each screen makes.

State lives on the server (DESIGN.md section 11): a :class:`Session` holds the data set the user
opened (a DataFrame read by :func:`sdckit.io.read`), the roles they confirmed and the session's
CSRF token. Every figure a screen shows comes from the library — :func:`sdckit.io.read`,
:meth:`sdckit.core.schema.Schema.infer`, :func:`sdckit.risk.summary.risk_summary` — never from
code of the app's own. The role suggestions are only proposals: nothing uses them until the user
confirms them.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import tempfile
import threading
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.core.errors import DataError, ParameterError, SchemaError, SdcError
from sdckit.core.method import Method
from sdckit.core.params import describe_rule
from sdckit.core.random import new_seed, parse_seed
from sdckit.core.schema import Schema
from sdckit.io import read
from sdckit.io.files import WRITABLE
from sdckit.methods import available, get_method
from sdckit.permutation import assess
from sdckit.pipeline import ProgressCallback, Release, protect
from sdckit.recipe import load_recipe, run_recipe
from sdckit.report.model import assessed_columns
from sdckit.risk.summary import risk_summary
from sdckit.utility import utility_loss

#: Rows shown in the preview of the data set (the first ones; the screen says it is a sample).
PREVIEW_ROWS = 10
#: The roles a column can be given on the roles screen: the schema's four (DESIGN.md section 2)
#: and the three columns the risk measures use by name.
ROLES: dict[str, str] = {
    "": "no role",
    "identifier": "identifier (direct: name, id number)",
    "quasi": "quasi-identifier (key variable)",
    "confidential": "confidential",
    "non_confidential": "non-confidential",
    "weight": "sampling weight",
    "household": "household id",
    "strata": "stratum",
}
#: Roles of which the data may have one column only.
SINGLE_ROLES = ("weight", "household")
#: Column names that suggest a weight or a household id (compared lower-cased).
_WEIGHT_NAMES = frozenset({"weight", "weights", "wgt", "w", "sampling_weight", "weight_factor", "wt"})
_HOUSEHOLD_NAMES = frozenset({"household", "household_id", "hh", "hhid", "hh_id", "hid", "ori_hid"})
#: The information-loss measures shown after each step (:data:`sdckit.utility.summary.MEASURES`).
UTILITY_MEASURES = ("il1", "correlation", "pmse")
#: The permutation verdict is computed on at most this many record pairs (a stated sample).
PERMUTATION_RECORDS = 2000
#: Stream of the session's seed the verdict's randomness is drawn from (not the release's).
PERMUTATION_STREAM = 0x5DC0A991
#: A categorical column with at most this many distinct values is suggested as a key variable.
QUASI_MAX_DISTINCT = 50


@dataclass
class Loaded:
    """A data set opened in the workbench: its display name, the frame the library read and the
    file's path on the machine when it was opened by its path (None for an upload)."""

    name: str
    frame: pd.DataFrame
    source: Path | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def overview(self) -> list[dict[str, Any]]:
        """:func:`column_overview` of the frame, computed once."""
        if "overview" not in self._cache:
            self._cache["overview"] = column_overview(self.frame)
        return self._cache["overview"]

    @property
    def suggestions(self) -> dict[str, tuple[str, str]]:
        """:func:`suggest_roles` of the frame, computed once."""
        if "suggestions" not in self._cache:
            self._cache["suggestions"] = suggest_roles(self.frame)
        return self._cache["suggestions"]


@dataclass(frozen=True)
class Step:
    """A step of the Protect screen: its method, the release of every step so far, the risk
    before (the previous step's, or the original's) and after, and the utility and the
    permutation-paradigm verdict of the release against the original."""

    method: Method
    release: Release
    before: dict[str, Any]
    after: dict[str, Any]
    utility: dict[str, float | None]
    verdict: dict[str, Any]


@dataclass
class Session:
    """One browser session: its id (the cookie), CSRF token, data set, confirmed roles, the seed
    of its protection (OS entropy, held on the server and never shown) and the protection step."""

    id: str
    csrf: str
    data: Loaded | None = None
    roles: dict[str, str] = field(default_factory=dict)
    confirmed: bool = False
    seed: int | str = field(default_factory=new_seed, repr=False)
    steps: list[Step] = field(default_factory=list)
    risk: dict[str, Any] | None = None  # risk_figures of the confirmed roles, computed once
    released: dict[str, str] | None = None  # the files the last release wrote, by kind
    jobs: dict[str, Job] = field(default_factory=dict)  # its long computations, by id

    @property
    def busy(self) -> Job | None:
        """The session's job still running, if any (one at a time: they change the session)."""
        return next((j for j in self.jobs.values() if j.state == "running"), None)

    @property
    def step(self) -> Step | None:
        """The last step applied (None before the first)."""
        return self.steps[-1] if self.steps else None

    def confirm(self, roles: dict[str, str]) -> None:
        """Keep the checked roles; the risk and protection measured on the old ones are dropped."""
        self.roles, self.confirmed, self.risk, self.steps, self.released = roles, True, None, [], None

    def open(self, loaded: Loaded) -> None:
        """Make ``loaded`` the session's data set; roles and protection start again."""
        self.data = loaded
        self.roles = {}
        self.confirmed = False
        self.steps = []
        self.risk = None
        self.released = None


class SessionStore:
    """The sessions of one running workbench, by id (thread-safe: handlers run in a pool)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self) -> Session:
        with self._lock:
            session = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))
            self._sessions[session.id] = session
            return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            return self._sessions.get(session_id)


# --------------------------------------------------------------------------- screen 1: open
def open_path(path: str | Path, name: str | None = None) -> Loaded:
    """Read the file at ``path`` with :func:`sdckit.io.read` (format from its extension).

    Raises :class:`DataError` with one line for anything that goes wrong, so that the page can
    show it and keep the data set already open.
    """
    path = Path(path).expanduser()
    label = name or path.name
    if not path.is_file():
        raise DataError(f"No file at {str(path)!r}; give the full path of a data file on this machine.")
    try:
        frame = read(path)
    except SdcError:
        raise
    except Exception as exc:  # a reader's own error (pandas, pyarrow, pyreadstat): one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"Could not read {label!r}: {first}") from None
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataError(f"{label!r} has no records; open a file with a header line and data rows.")
    return Loaded(name=label, frame=frame, source=path.resolve())


def open_upload(path: Path, name: str) -> Loaded:
    """:func:`open_path` on an uploaded file saved at ``path``; a refusal names the file as the
    user knows it (``name``), not the private folder it was saved in."""
    try:
        return dataclasses.replace(open_path(path, name), source=None)  # the folder is removed
    except SdcError as exc:
        raise DataError(" ".join(str(exc).replace(str(path), name).split())) from None


def safe_upload_name(filename: str) -> str:
    """The last component of an uploaded file's name (its extension picks the reader), refused
    when it is empty or hidden."""
    name = PurePath(filename.replace("\\", "/")).name.strip()
    if not name or name.startswith("."):
        raise DataError(f"The uploaded file's name {filename!r} is not usable; upload a file such as data.csv.")
    return name


def upload_folder() -> tempfile.TemporaryDirectory[str]:
    """A private folder (mode 0700) for one upload: the file is read from it and the folder removed
    at once, so the original is held in memory only."""
    return tempfile.TemporaryDirectory(prefix="sdckit-app-")


def column_overview(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per column: name, kind (:meth:`Schema.infer`), dtype, missing values and distinct values."""
    schema = Schema.infer(frame)
    out = []
    for column in schema.columns:
        series = frame[column.name]
        out.append({"name": column.name, "kind": column.kind.value, "dtype": str(series.dtype),
                    "missing": int(series.isna().sum()), "distinct": int(series.nunique(dropna=True))})
    return out


def preview(frame: pd.DataFrame, rows: int = PREVIEW_ROWS) -> list[list[str]]:
    """The first ``rows`` records as text (missing values as empty cells)."""
    head = frame.head(rows)
    return [["" if pd.isna(v) else str(v) for v in row] for row in head.itertuples(index=False)]


# --------------------------------------------------------------------------- screen 2: roles
def suggest_roles(frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Proposed role and the reason for it, by column; the user confirms or changes them.

    * every value distinct and none missing, not a float: ``identifier`` ("unique for each record");
    * a name such as ``weight``/``wgt`` on a positive numeric column: ``weight``;
    * a name such as ``household``/``hhid``: ``household``;
    * a categorical (nominal, ordinal) or integer column with 2 to :data:`QUASI_MAX_DISTINCT`
      distinct values: ``quasi``;
    * any other numeric column: ``confidential``.
    """
    schema = Schema.infer(frame)
    out: dict[str, tuple[str, str]] = {}
    have_weight = have_household = False
    for column in schema.columns:
        series = frame[column.name]
        lower = column.name.strip().lower()
        distinct = int(series.nunique(dropna=True))
        numeric = column.kind.value == "numeric"
        is_float = pd.api.types.is_float_dtype(series.dtype)
        if lower in _WEIGHT_NAMES and numeric and not have_weight and bool((series.dropna() > 0).all()):
            out[column.name] = ("weight", "its name says it is a weight")
            have_weight = True
        elif lower in _HOUSEHOLD_NAMES and not have_household:
            out[column.name] = ("household", "its name says it is a household id")
            have_household = True
        elif distinct == len(series) and not series.isna().any() and not is_float and len(series) > 1:
            out[column.name] = ("identifier", "a different value in every record")
        elif 2 <= distinct <= QUASI_MAX_DISTINCT and (not numeric or not is_float):
            out[column.name] = ("quasi", f"{distinct} categories: an intruder may know it")
        elif numeric:
            out[column.name] = ("confidential", "a measured number")
    return out


def check_roles(frame: pd.DataFrame, roles: Mapping[str, str]) -> dict[str, str]:
    """The roles, checked: known role names and columns, one weight and one household at most, a
    numeric weight; the schema roles through :meth:`Schema.infer` (which checks them too)."""
    clean: dict[str, str] = {}
    for name, role in roles.items():
        if name not in frame.columns:
            raise SchemaError(f"Column {name!r} is not in the data; the columns are: {', '.join(map(str, frame.columns))}.")
        if role not in ROLES:
            raise SchemaError(f"Unknown role {role!r} for column {name!r}; use one of: {', '.join(r for r in ROLES if r)}.")
        if role:
            clean[name] = role
    for single in SINGLE_ROLES:
        chosen = [n for n, r in clean.items() if r == single]
        if len(chosen) > 1:
            raise SchemaError(f"Columns {', '.join(map(repr, chosen))} are all marked {ROLES[single]}; mark one only.")
    for name in (n for n, r in clean.items() if r == "weight"):
        if not pd.api.types.is_numeric_dtype(frame[name].dtype):
            raise SchemaError(f"Weight column {name!r} is not numeric; mark a column of positive numbers as the weight.")
    schema_of(frame, clean)
    return clean


def schema_of(frame: pd.DataFrame, roles: Mapping[str, str]) -> Schema:
    """The data set's :class:`Schema` with the roles the user confirmed (weight, household and
    strata columns carry no schema role)."""
    return Schema.infer(frame, **{r: [n for n, v in roles.items() if v == r]
                                  for r in ("identifier", "quasi", "confidential", "non_confidential")})


# --------------------------------------------------------------------------- screen 3: risk
def risk_figures(frame: pd.DataFrame, roles: Mapping[str, str]) -> dict[str, Any]:
    """:func:`~sdckit.risk.summary.risk_summary` on the quasi-identifiers, with the weight,
    household and strata columns the user marked: aggregates only (counts and shares)."""
    keys = [n for n, r in roles.items() if r == "quasi"]
    if not keys:
        raise SchemaError("No quasi-identifier is marked; mark the key variables on the Roles screen first.")
    weight = next((n for n, r in roles.items() if r == "weight"), None)
    household = next((n for n, r in roles.items() if r == "household"), None)
    strata = [n for n, r in roles.items() if r == "strata"] or None
    return risk_summary(frame, keys, weight, household, strata=strata, suda=False).to_dict()


# --------------------------------------------------------------------------- screen 4: protect
@dataclass(frozen=True)
class Parameter:
    """One parameter of a registered method as the Protect screen asks for it."""

    name: str
    rule: str
    required: bool
    default: str
    listy: bool = False  # a list parameter: one name typed alone is a list of one


def methods() -> dict[str, type[Method]]:
    """Every registered method by its recipe name (:func:`sdckit.methods.available`), sorted."""
    return dict(sorted(available().items()))


def shown_value(value: Any) -> str:
    """A parameter value as the form shows it (the text :func:`parse_value` reads back)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    return str(value)


def parameters(name: str) -> list[Parameter]:
    """The parameters of method ``name`` (its dataclass fields), each with the phrase of its
    rule from the method's ``constraints`` (:func:`~sdckit.core.params.describe_rule`)."""
    cls = methods().get(name)
    if cls is None:
        raise ParameterError(f"Unknown method {name!r}; choose one of the list.")
    out = []
    for f in dataclasses.fields(cls):
        if not f.compare:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = "" if required else shown_value(f.default if f.default is not dataclasses.MISSING else f.default_factory())
        rule = describe_rule(cls.constraints[f.name]) if f.name in cls.constraints else ""
        if f.name in ("columns", "strata") and not rule:
            rule = "None or column names, comma-separated"
        out.append(Parameter(f.name, rule, required, default, str(f.type).startswith("tuple")))
    return out


def parse_value(text: str) -> Any:
    """A parameter typed in the form, read as a TOML value (as in a recipe: ``3``, ``0.1``,
    ``true``, ``"mdav"``, ``["age", "sex"]``); text that is not TOML is a string, or a list of
    strings when it holds commas (``age, sex``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if "," in text:
            return [t.strip() for t in text.split(",") if t.strip()]
        return text.strip()


def build_method(name: str, texts: Mapping[str, str]) -> Method:
    """The method ``name`` with the parameters the user typed (empty: the default), built by
    :func:`sdckit.methods.get_method`, whose rules raise :class:`ParameterError`."""
    known = {p.name: p for p in parameters(name)}
    values = {k: parse_value(v) for k, v in texts.items() if k in known and v.strip()}
    for k, v in values.items():
        if known[k].listy and isinstance(v, str):
            values[k] = [v]
    return get_method(name, values)


def parameter_named(message: str, names: list[str]) -> str | None:
    """The parameter a :class:`ParameterError` message names, to show it beside its field."""
    for quoted in re.findall(r"'([^']+)'", message):
        if quoted in names:
            return quoted
    return None


def protect_steps(loaded: Loaded, roles: Mapping[str, str], methods: list[Method], seed: int | str,
                  progress: ProgressCallback | None = None) -> Release:
    """The release of ``methods`` applied in order: :func:`sdckit.pipeline.protect` with the
    schema of the confirmed roles (identifiers dropped) and the session's seed — the very call
    a recipe of these steps makes, so that the screen shows what the release will be."""
    frame = loaded.frame
    return protect(frame, methods, schema=schema_of(frame, roles), seed=seed, progress=progress)


def utility_figures(original: pd.DataFrame, released: pd.DataFrame) -> dict[str, float | None]:
    """Information loss of a release, by :data:`UTILITY_MEASURES`: :func:`sdckit.utility.utility_loss`
    on the numeric columns the release kept (None where a measure does not apply, e.g. IL1
    when records were removed, or no numeric column)."""
    columns = [c for c in released.columns if c in original.columns
               and pd.api.types.is_numeric_dtype(released[c]) and pd.api.types.is_numeric_dtype(original[c])]
    out: dict[str, float | None] = {}
    for measure in UTILITY_MEASURES:
        try:
            out[measure] = utility_loss(original[columns], released[columns], None, measure) if columns else None
        except (SdcError, ValueError):
            out[measure] = None
    if out["correlation"] is not None and len(columns) < 2:
        out["correlation"] = None  # no pair of columns to correlate
    return out


def permutation_verdict(original: pd.DataFrame, release: Release, seed: int | str) -> dict[str, Any]:
    """The permutation paradigm's verdict on a release (:func:`sdckit.permutation.assess`, seeds
    000/001) on the columns the report assesses (:func:`sdckit.report.model.assessed_columns`:
    the quasi-identifiers and confidential columns of an ordered kind), on a simple random
    sample of :data:`PERMUTATION_RECORDS` record pairs when there are more (the sample is
    stated). Its randomness is derived from the session's seed."""
    released = release.data
    columns = assessed_columns(original, released, release.schema)
    n = len(original)
    sample = n if n <= PERMUTATION_RECORDS else PERMUTATION_RECORDS
    try:
        if not columns:
            raise DataError("no numeric, ordinal or date quasi-identifier or confidential column is released")
        state = np.random.SeedSequence([parse_seed(seed), PERMUTATION_STREAM])
        result = assess(original[columns], released[columns], schema=release.schema,
                        records=PERMUTATION_RECORDS if n > PERMUTATION_RECORDS else None, seed=state)
    except (SdcError, ValueError, TypeError) as exc:
        return {"verdict": None, "note": " ".join(str(exc).split()), "sample": sample, "records": n,
                "columns": columns}
    v = result.verification
    return {"verdict": v.verdict, "p_value": float(v.p_value), "note": None, "sample": sample, "records": n,
            "columns": columns}


def add_step(session: Session, method: Method, job: Job | None = None) -> Step:
    """Apply ``method`` on the result of the session's steps (the release of all steps so far
    plus this one, :func:`protect_steps`), measure the risk before and after, the utility and
    the verdict, and append the step. ``job`` follows the progress (and may cancel it: the
    session is then unchanged)."""
    loaded, roles = session.data, session.roles
    assert loaded is not None
    frame = loaded.frame
    methods = [*(s.method for s in session.steps), method]
    total = len(methods) + 3

    def report(done: int, stage: str) -> None:
        if job is not None:
            job.update(done, total, stage)

    before = session.steps[-1].after if session.steps else risk_figures(frame, roles)
    release = protect_steps(loaded, roles, methods, session.seed,
                            progress=lambda done, _total, m: report(done, f"applying {m.name}"))
    report(len(methods), "measuring the risk")
    after = risk_figures(release.data, {n: r for n, r in roles.items() if n in release.data.columns})
    report(len(methods) + 1, "measuring the utility")
    utility = utility_figures(frame, release.data)
    report(len(methods) + 2, "the permutation verdict")
    step = Step(method, release, before, after, utility, permutation_verdict(frame, release, session.seed))
    report(total, "done")
    session.steps.append(step)
    session.released = None
    return step


def undo_step(session: Session) -> Step | None:
    """Remove the last step (the one before it is the current release again); None if none."""
    session.released = None
    return session.steps.pop() if session.steps else None


# --------------------------------------------------------------------------- screen 5: release
def toml_value(value: Any) -> str:
    """A parameter value as TOML (strings, numbers, booleans and lists of them: what a recipe's
    method parameters hold once plain)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ParameterError(f"A parameter value {type(value).__name__} cannot be saved in a recipe yet; "
                         "write the recipe by hand for this method.")


def recipe_text(input_path: Path, roles: Mapping[str, str], methods: list[Method], seed_file: str,
                fmt: str, name: str) -> str:
    """The session as a recipe TOML (:mod:`sdckit.recipe`): input, schema roles, the steps in
    order, the output beside the recipe; the seed is in ``seed_file``, never in the recipe."""
    lines = ["# Saved by the sdckit workbench: `sdckit protect` on this file reproduces its release.",
             f"seed_file = {json.dumps(seed_file)}  # secret: keep it, never publish it", "",
             "[input]", f"path = {json.dumps(str(input_path))}", "", "[schema]"]
    for role in ("identifier", "quasi", "confidential", "non_confidential"):
        names = [n for n, r in roles.items() if r == role]
        if names:
            lines.append(f"{role} = {toml_value(names)}")
    for m in methods:
        lines += ["", "[[method]]", f"name = {json.dumps(m.name)}"]
        lines += [f"{k} = {toml_value(v)}" for k, v in m.params().items() if v is not None]
    lines += ["", "[output]", 'dir = "."', f"format = {json.dumps(fmt)}", f"name = {json.dumps(name)}", ""]
    return "\n".join(lines)


def write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


@dataclass(frozen=True)
class ReleasePlan:
    """Where a release goes, checked: the folder (absolute), the data format, the input file."""

    folder: Path
    format: str
    source: Path


def release_session(session: Session, folder: str, fmt: str, input_path: str | None = None,
                    job: Job | None = None) -> dict[str, str]:
    """:func:`write_release` of :func:`release_plan`: the whole release in one call."""
    return write_release(session, release_plan(session, folder, fmt, input_path), job)


def release_plan(session: Session, folder: str, fmt: str, input_path: str | None = None) -> ReleasePlan:
    """Check where the session's release would go, before anything is written (one-line
    refusals): ``folder`` a full path, not a file, not the input's folder; ``fmt`` writable;
    the input the path the data set was opened from, or ``input_path``, which must hold the
    same data (an uploaded data set has no path on the machine)."""
    loaded = session.data
    if loaded is None or not session.confirmed:
        raise ParameterError("Open a data set and confirm its roles first.")
    if not session.steps:
        raise ParameterError("Apply at least one step on the Protect screen before releasing.")
    if fmt not in WRITABLE:
        raise ParameterError(f"Output format {fmt!r} is not writable; choose one of {', '.join(WRITABLE)}.")
    text = (folder or "").strip()
    if not text:
        raise ParameterError("Give the folder to write the release into (a full path on this machine).")
    out = Path(text).expanduser()
    if not out.is_absolute():
        raise ParameterError(f"The folder {text!r} is not a full path; give one such as /home/me/release.")
    if out.exists() and not out.is_dir():
        raise ParameterError(f"{text!r} is a file, not a folder; give a folder for the release.")
    given = (input_path or "").strip()
    source = Path(given).expanduser().resolve() if given else loaded.source
    if source is None:
        raise ParameterError("The data set was uploaded: give the path of its file on this machine, "
                             "which the recipe names as its input.")
    if not source.is_file():
        raise ParameterError(f"No file at {str(source)!r}; give the path of the data set's file.")
    if source != loaded.source and not read(source).equals(loaded.frame):
        raise DataError(f"The file {str(source)!r} does not hold the data set open in the workbench; "
                        "give the path of the file you opened.")
    out = out.resolve()
    if source.parent == out:
        raise ParameterError(f"The folder {str(out)!r} holds the input file; choose another folder, "
                             "so that nothing overwrites the original.")
    return ReleasePlan(out, fmt, source)


def write_release(session: Session, plan: ReleasePlan, job: Job | None = None) -> dict[str, str]:
    """Write the session's release as ``plan`` says: the session saved as a recipe
    (``<stem>.recipe.toml``) with its seed in ``<stem>.seed`` beside it (mode 0600), then the
    recipe run by :func:`sdckit.recipe.run_recipe` — the call ``sdckit protect`` makes — which
    writes the data, the manifest and the HTML report. Returns the paths by kind. ``job``
    follows the progress and may cancel the run: nothing is then left in the folder."""
    out, fmt, source = plan.folder, plan.format, plan.source
    out.mkdir(parents=True, exist_ok=True)
    stem = source.name.split(".")[0] + "_protected"
    methods = [s.method for s in session.steps]
    recipe_path, seed_path = out / f"{stem}.recipe.toml", out / f"{stem}.seed"
    text = recipe_text(source, session.roles, methods, seed_path.name, fmt, stem)  # refuses before writing
    total = len(methods) + 4  # the steps, then the report's stages (as `sdckit protect` counts them)

    def report(done: int, stage: str) -> None:
        if job is not None:
            job.update(done, total, stage)

    try:
        write_secret(seed_path, f"{session.seed}\n")
        recipe_path.write_text(text, encoding="utf-8")
        recipe = load_recipe(recipe_path)
        if list(recipe.methods) != methods:  # the recipe must say exactly what the session did
            raise ParameterError("The steps could not be saved as a recipe exactly; write the recipe by hand.")
        result = run_recipe(recipe, progress=lambda done, _t, m: report(done, f"applying {m.name}"),
                            report_progress=lambda done, _t, *rest: report(len(methods) + done, "the report"))
    except BaseException:
        recipe_path.unlink(missing_ok=True)
        seed_path.unlink(missing_ok=True)
        raise
    session.released = {"data": str(result.data_path), "manifest": str(result.manifest_path),
                        "report": "" if result.report_path is None else str(result.report_path),
                        "recipe": str(recipe_path), "seed": str(seed_path),
                        "verdict": "" if result.verdict is None else result.verdict.text}
    return session.released


def open_recipe(session: Session, path: str) -> None:
    """Continue a session from a recipe: its input opened, its schema's roles confirmed, its
    seed taken and its methods applied again as the steps (weight, household and strata roles
    are not in a recipe: mark them again)."""
    text = (path or "").strip()
    if not text:
        raise ParameterError("Give the path of a recipe (a .toml file) on this machine.")
    recipe = load_recipe(Path(text).expanduser())
    loaded = open_path(recipe.input_path)
    roles = {str(n): r for r in ("identifier", "quasi", "confidential", "non_confidential")
             for n in recipe.schema.get(r, ())}
    clean = check_roles(loaded.frame, roles)
    session.open(loaded)
    session.confirm(clean)
    if recipe.seed is not None:
        session.seed = recipe.seed
    for method in recipe.methods:
        add_step(session, method)
