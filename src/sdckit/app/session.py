"""What one browser session of the workbench holds, and the library calls each screen makes.

The screens' own calls are in :mod:`sdckit.app.protect` (Protect), :mod:`sdckit.app.tables`
(Tables) and :mod:`sdckit.app.release` (Release). State lives on the server (DESIGN.md section 11): a :class:`Session` holds the data set the user
opened (a DataFrame read by :func:`sdckit.io.read`), the roles they confirmed and the session's
CSRF token. Every figure a screen shows comes from the library — :func:`sdckit.io.read`,
:meth:`sdckit.core.schema.Schema.infer`, :func:`sdckit.risk.summary.risk_summary` — never from
code of the app's own. The role suggestions are only proposals: nothing uses them until the user
confirms them.
"""

from __future__ import annotations

import base64
import dataclasses
import secrets
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.core.errors import DataError, SchemaError, SdcError
from sdckit.core.method import Method
from sdckit.core.random import new_seed
from sdckit.core.schema import Schema
from sdckit.io import detect_format, read
from sdckit.io.tauargus import rda_beside
from sdckit.pipeline import Release
from sdckit.report import figures as drawing
from sdckit.report.risk_section import SUDA_MAX_SIZE
from sdckit.risk.classes import equivalence_classes
from sdckit.risk.summary import risk_summary, suda_summary

#: Rows shown in the preview of the data set (the first ones; the screen says it is a sample).
PREVIEW_ROWS = 10
#: Beyond this many records the distinct values of the Data screen and the role suggestions are
#: counted on a simple random sample of this size (the pages say so): exact counts of a large
#: file's text columns are what is slow; missing values and kinds stay exact.
SAMPLE_RECORDS = 100_000
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
#: A categorical column with at most this many distinct values is suggested as a key variable.
QUASI_MAX_DISTINCT = 50


@dataclass
class Loaded:
    """A data set opened in the workbench: its display name, the frame the library read and the
    file's path on the machine when it was opened by its path (None for an upload)."""

    name: str
    frame: pd.DataFrame
    source: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the reader's: a tau-ARGUS file's rda
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, called once per data set and kept under ``key`` (a data set opened anew
        is a new :class:`Loaded`, with nothing kept)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def sample(self) -> pd.DataFrame:
        """:func:`record_sample` of the frame, drawn once (the whole frame when it is small)."""
        return self.cached("sample", lambda: record_sample(self.frame))

    @property
    def sampled(self) -> bool:
        """Whether :attr:`sample` is a sample rather than every record."""
        return len(self.sample) < len(self.frame)

    @property
    def overview(self) -> list[dict[str, Any]]:
        """:func:`column_overview` of the frame (distinct values on :attr:`sample`), computed once."""
        return self.cached("overview", lambda: column_overview(self.frame, self.sample))

    @property
    def suggestions(self) -> dict[str, tuple[str, str]]:
        """:func:`suggest_roles` of :attr:`sample`, computed once."""
        return self.cached("suggestions", lambda: suggest_roles(self.sample))


@dataclass(frozen=True)
class Step:
    """A step of the Protect screen: its method, the release of every step so far, the risk
    before (the previous step's, or the original's) and after, and the utility, the
    permutation-paradigm verdict and the distance-based record linkage of the release against
    the original."""

    method: Method
    release: Release
    before: dict[str, Any]
    after: dict[str, Any]
    utility: dict[str, float | None]
    verdict: dict[str, Any]
    linkage: dict[str, Any] = field(default_factory=dict)  # protect.linkage_figures of the release


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
    risk_plots: dict[str, str] | None = None  # risk_plots of the same, computed with it
    risk_job: Job | None = None  # the job measuring them (the Risk screen shows how it ended)
    suda: dict[str, Any] | None = None  # suda_figures of the confirmed roles, when asked for
    released: dict[str, str] | None = None  # the files the last release wrote, by kind
    table: Any = None  # the Tables screen's last protected table (sdckit.app.tables.TableOutcome)
    candidates: list[Any] = field(default_factory=list)  # steps kept for comparison (sdckit.compare.Candidate)
    compared: Any = None  # the Compare screen's last comparison or tuning (sdckit.app.compare.Shown)
    jobs: dict[str, Job] = field(default_factory=dict)  # its long computations, by id
    user: str | None = None  # login mode: the analyst whose API key opened the session
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)  # starting a job

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
        self.risk_plots, self.suda, self.risk_job = None, None, None
        self.table, self.candidates, self.compared = None, [], None

    def open(self, loaded: Loaded) -> None:
        """Make ``loaded`` the session's data set; roles and protection start again."""
        self.data = loaded
        self.roles = {}
        self.confirmed = False
        self.steps = []
        self.risk = None
        self.risk_plots, self.suda, self.risk_job = None, None, None
        self.released = None
        self.table, self.candidates, self.compared = None, [], None


class SessionStore:
    """The sessions of one running workbench, by id (thread-safe: handlers run in a pool)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self, user: str | None = None) -> Session:
        with self._lock:
            session = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32), user=user)
            self._sessions[session.id] = session
            return session

    def end(self, session: Session) -> None:
        """Forget ``session`` (a logout): its jobs are asked to stop, its data dropped."""
        for job in session.jobs.values():
            job.cancel()
        with self._lock:
            self._sessions.pop(session.id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            return self._sessions.get(session_id)


# --------------------------------------------------------------------------- screen 1: open
def open_path(path: str | Path, name: str | None = None, rda: str | Path | None = None) -> Loaded:
    """Read the file at ``path`` with :func:`sdckit.io.read` (format from its extension).

    tau-ARGUS microdata (``.asc``, ``.asc.gz``) are laid out by their metadata: ``rda``, or
    the ``.rda`` beside the file (:func:`sdckit.io.tauargus.rda_beside`), which gives the
    columns' names and which are numeric; the ``.rda`` is kept in the reader's options
    (``Loaded.options``) for the saved recipe.

    Raises :class:`DataError` with one line for anything that goes wrong, so that the page can
    show it and keep the data set already open.
    """
    path = Path(path).expanduser()
    label = name or path.name
    if not path.is_file():
        raise DataError(f"No file at {str(path)!r}; give the full path of a data file on this machine.")
    options: dict[str, Any] = {}
    given = str(rda or "").strip()
    try:
        tau = detect_format(path) == "tauargus"
    except SdcError:
        tau = False
    if given and not tau:
        raise DataError(f"A .rda describes tau-ARGUS microdata (.asc); {label!r} is not one: leave the "
                        ".rda field empty.")
    if given:
        found = Path(given).expanduser()
        if not found.is_file():
            raise DataError(f"No .rda file at {given!r}; give the full path of the tau-ARGUS metadata, or leave "
                            "it empty for the .rda beside the data file.")
        options["rda"] = found.resolve()
    elif tau:
        try:
            options["rda"] = rda_beside(path).resolve()
        except DataError:
            raise DataError(f"No single .rda beside {label!r}: give the path of its tau-ARGUS metadata "
                            "(.rda) too.") from None
    try:
        frame = read(path, **options)
    except SdcError:
        raise
    except Exception as exc:  # a reader's own error (pandas, pyarrow, pyreadstat): one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"Could not read {label!r}: {first}") from None
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataError(f"{label!r} has no records; open a file with a header line and data rows.")
    return Loaded(name=label, frame=frame, source=path.resolve(), options=options)


def open_upload(path: Path, name: str) -> Loaded:
    """:func:`open_path` on an uploaded file saved at ``path``; a refusal names the file as the
    user knows it (``name``), not the private folder it was saved in."""
    try:
        return dataclasses.replace(open_path(path, name), source=None, options={})  # the folder is removed
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


def record_sample(frame: pd.DataFrame, size: int | None = None) -> pd.DataFrame:
    """``frame`` itself when it has at most ``size`` (default :data:`SAMPLE_RECORDS`) records,
    else a simple random sample of ``size`` of them in file order. It only describes the file on
    the Data and Roles screens (nothing released is drawn from it), from a fresh generator."""
    size = SAMPLE_RECORDS if size is None else size
    if len(frame) <= size:
        return frame
    rows = np.sort(np.random.default_rng().choice(len(frame), size, replace=False))
    return frame.iloc[rows]


def column_overview(frame: pd.DataFrame, sample: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per column: name, kind (:meth:`Schema.infer`), dtype and missing values over every record,
    and distinct values over ``sample`` (:func:`record_sample`; default: every record)."""
    schema = Schema.infer(frame)
    sample = frame if sample is None else sample
    out = []
    for column in schema.columns:
        series = frame[column.name]
        out.append({"name": column.name, "kind": column.kind.value, "dtype": str(series.dtype),
                    "missing": int(series.isna().sum()), "distinct": int(sample[column.name].nunique(dropna=True))})
    return out


def preview(frame: pd.DataFrame, rows: int = PREVIEW_ROWS) -> list[list[str]]:
    """The first ``rows`` records as text (missing values as empty cells)."""
    head = frame.head(rows)
    return [["" if pd.isna(v) else str(v) for v in row] for row in head.itertuples(index=False)]


# --------------------------------------------------------------------------- screen 2: roles
def suggest_roles(frame: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Proposed role and the reason for it, by column; the user confirms or changes them. On a
    large file the workbench passes :func:`record_sample` (the Roles screen says so).

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
def quasi_keys(roles: Mapping[str, str]) -> list[str]:
    """The columns marked quasi-identifier, refused (one line) when there is none."""
    keys = [n for n, r in roles.items() if r == "quasi"]
    if not keys:
        raise SchemaError("No quasi-identifier is marked; mark the key variables on the Roles screen first.")
    return keys


def risk_figures(frame: pd.DataFrame, roles: Mapping[str, str]) -> dict[str, Any]:
    """:func:`~sdckit.risk.summary.risk_summary` on the quasi-identifiers, with the weight,
    household and strata columns the user marked: aggregates only (counts and shares)."""
    keys = quasi_keys(roles)
    weight = next((n for n, r in roles.items() if r == "weight"), None)
    household = next((n for n, r in roles.items() if r == "household"), None)
    strata = [n for n, r in roles.items() if r == "strata"] or None
    return risk_summary(frame, keys, weight, household, strata=strata, suda=False).to_dict()


def image(svg_text: str) -> str:
    """An SVG figure of :mod:`sdckit.report.figures` as a ``data:`` URI for an ``<img>`` (the
    page's Content-Security-Policy allows no inline style, which matplotlib's SVG carries)."""
    return "data:image/svg+xml;base64," + base64.b64encode(str(svg_text).encode("utf-8")).decode("ascii")


def risk_plots(frame: pd.DataFrame, roles: Mapping[str, str], figures: Mapping[str, Any]) -> dict[str, str]:
    """The Risk screen's plots, the report's own figures as ``data:`` URIs: ``classes``, the
    number of equivalence classes of each size on the quasi-identifiers
    (:func:`~sdckit.risk.classes.equivalence_classes`, :func:`sdckit.report.figures.class_sizes`),
    and ``bands``, the records per band of individual risk of ``figures`` (:func:`risk_figures`)
    drawn as the report draws them (:func:`sdckit.report.figures.column_bars`). Counts only."""
    keys = quasi_keys(roles)
    classes = equivalence_classes(frame, keys).size_counts
    bands = pd.DataFrame({"records": figures["risk_bands"]})
    return {"classes": image(drawing.class_sizes(classes)),
            "bands": image(drawing.column_bars(bands, ylabel="records"))}


def suda_figures(frame: pd.DataFrame, roles: Mapping[str, str], job: Job | None = None) -> dict[str, Any]:
    """:func:`~sdckit.risk.summary.suda_summary` (SUDA2) on the quasi-identifiers, within the
    strata the user marked, for minimal sample uniques of up to
    :data:`~sdckit.report.risk_section.SUDA_MAX_SIZE` keys (as the report): what
    ``risk_summary(..., suda=True, suda_max_size=...)`` reports as ``suda2``. Counts only; its
    progress goes to ``job``."""
    keys = quasi_keys(roles)
    strata = [n for n, r in roles.items() if r == "strata"] or None
    progress = None if job is None else (lambda done, total: job.update(done, total, "searching minimal sample uniques"))
    return suda_summary(frame, keys, min(len(keys), SUDA_MAX_SIZE), strata=strata, progress=progress)
