"""The Protect screen's calls: the registry's methods and their parameter rules, a step applied
with the session's seed through :func:`sdckit.pipeline.protect`, and what is measured after it
(risk, utility, the permutation paradigm's verdict), with undo (issue 31, screen 4)."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.app.session import Loaded, Session, Step, risk_figures, schema_of
from sdckit.core.errors import DataError, ParameterError, SdcError
from sdckit.core.hierarchy import Hierarchy
from sdckit.core.method import Method
from sdckit.core.params import describe_rule
from sdckit.core.random import parse_seed
from sdckit.core.result import plain
from sdckit.core.tomlfile import toml_value
from sdckit.methods import available, get_method
from sdckit.permutation import assess
from sdckit.pipeline import ProgressCallback, Release, protect
from sdckit.report.model import assessed_columns, on_release_scale
from sdckit.risk import distance_linkage
from sdckit.utility import utility_loss
from sdckit.utility.columns import shared_numeric_columns

#: The information-loss measures shown after each step (:data:`sdckit.utility.summary.MEASURES`).
UTILITY_MEASURES = ("il1", "correlation", "pmse")
#: The permutation verdict is computed on at most this many record pairs (a stated sample).
PERMUTATION_RECORDS = 2000
#: Stream of the session's seed the verdict's randomness is drawn from (not the release's).
PERMUTATION_STREAM = 0x5DC0A991
#: Stream of the session's seed the linkage's sample is drawn from.
LINKAGE_STREAM = 0x5DC011A6


@dataclass(frozen=True)
class Parameter:
    """One parameter of a registered method as the Protect screen asks for it: ``kind`` is
    ``"text"`` (one TOML value), ``"mapping"`` (a mapping, typed as TOML lines or JSON in a text
    area) or ``"path"`` (a file the method reads, in the data set's folder)."""

    name: str
    rule: str
    required: bool
    default: str
    listy: bool = False  # a list parameter: one name typed alone is a list of one
    kind: str = "text"


#: The phrase added to the rule of a parameter naming files (:func:`within_folder`).
IN_FOLDER = "; files in the data set's folder or below"


def methods() -> dict[str, type[Method]]:
    """Every registered method by its recipe name (:func:`sdckit.methods.available`), sorted."""
    return dict(sorted(available().items()))


def recipe_value(value: Any) -> Any:
    """A parameter value as a recipe holds it: a :class:`~sdckit.core.hierarchy.Hierarchy` the
    path of its file (refused, one line, when it was not read from one), a mapping a dict of
    such values, anything else :func:`sdckit.core.result.plain`."""
    if isinstance(value, Hierarchy):
        if value.source is None:
            raise ParameterError("A hierarchy built in memory cannot be saved in a recipe; read it from a CSV file.")
        return value.source
    if isinstance(value, Mapping):
        return {str(k): recipe_value(v) for k, v in value.items()}
    return plain(value)


def recipe_params(method: Method) -> dict[str, Any]:
    """The method's parameters as its recipe's ``[[method]]`` table writes them (None left out)."""
    values = {k: recipe_value(v) for k, v in method.params(plain=False).items()}
    return {k: v for k, v in values.items() if v is not None}


def shown_value(value: Any) -> str:
    """A parameter value as the form shows it (the text :func:`parse_value` or
    :func:`parse_mapping` reads back): a mapping as TOML lines ``key = value``, a hierarchy
    as the path of its file."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    if isinstance(value, Hierarchy | Mapping):
        saved = recipe_value(value)
        return saved if isinstance(saved, str) else "\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in saved.items())
    return str(value)


#: A mapping in the steps list shows at most this many pairs (then how many more).
SHOWN_PAIRS = 4


def listed_value(value: Any) -> str:
    """A parameter value as the steps list shows it, short and readable: a hierarchy by the name
    of its file and its shape (``region.csv: 3 levels, 12 codes``), a mapping as ``a -> b, ...``
    (at most :data:`SHOWN_PAIRS` pairs, then how many more), anything else as its plain value
    (:func:`sdckit.core.result.plain`)."""
    if isinstance(value, Hierarchy):
        shape = f"{value.levels} levels, {len(value.values)} codes"
        return f"{Path(value.source).name}: {shape}" if value.source else f"hierarchy: {shape}"
    if isinstance(value, Mapping):
        pairs = [f"{k} -> {listed_value(v)}" for k, v in list(value.items())[:SHOWN_PAIRS]]
        more = len(value) - SHOWN_PAIRS
        return ", ".join(pairs) + (f", ... ({more} more)" if more > 0 else "")
    return str(plain(value))


def step_text(method: Method) -> str:
    """A step as the Protect and Compare screens list it: ``name(param=value, ...)``, each value
    given by :func:`listed_value` (None left out)."""
    given = ", ".join(f"{k}={listed_value(v)}" for k, v in method.params(plain=False).items() if v is not None)
    return f"{method.name}({given})"


def parameters(name: str) -> list[Parameter]:
    """The parameters of method ``name`` (its dataclass fields), each with the phrase of its
    rule from the method's ``constraints`` (:func:`~sdckit.core.params.describe_rule`) and how
    it is asked for (:attr:`Parameter.kind`: a mapping in a text area, a path of a file)."""
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
        kind = "mapping" if "Mapping" in str(f.type) else "path" if f.name in cls.path_params else "text"
        if f.name in cls.path_params:
            rule += IN_FOLDER
        out.append(Parameter(f.name, rule, required, default, str(f.type).startswith("tuple"), kind))
    return out


def parse_value(text: str) -> Any:
    """A parameter typed in the form, read as a TOML value (as in a recipe: ``3``, ``0.1``,
    ``true``, ``"mdav"``, ``["age", "sex"]``); text that is not TOML is a string, or a list
    when it holds commas, each item read alike (``age, sex``; ``0, 30, 120``: what
    :func:`shown_value` shows of a tuple)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if "," in text:
            return [parse_value(t.strip()) for t in text.split(",") if t.strip()]
        return text.strip()


def parse_mapping(name: str, text: str) -> Any:
    """A mapping parameter typed in its text area: TOML lines (``master = "higher"``, one per
    line, as the recipe's table would hold them), or one inline table or JSON object
    (``{"master": "higher"}``). Other text is :func:`parse_value`'s (e.g. ``data``, for the
    method's rules to judge). Text that looks like a mapping and is not one is refused in one
    line naming the parameter."""
    text = text.strip()
    if text.startswith("{"):
        for read in (lambda t: tomllib.loads(f"v = {t}")["v"], json.loads):
            try:
                return read(text)
            except ValueError:  # TOMLDecodeError and JSONDecodeError are ValueErrors
                pass
        raise ParameterError(f"The {name!r} parameter is neither a TOML inline table nor a JSON object; write "
                             'e.g. { master = "higher" } or {"master": "higher"}.')
    if "=" in text or "\n" in text:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ParameterError(f"The {name!r} parameter is not TOML lines key = value ({exc}); write e.g. "
                                 'master = "higher", one pair per line, text in quotes.') from None
    return parse_value(text)


def within_folder(name: str, value: Any, folder: Path | None) -> Any:
    """A path parameter's value (a path, or a mapping whose values are paths) with each path
    made absolute from ``folder`` — the folder of the data set's file — and refused (one line)
    when it leads outside it (``..``, an absolute path elsewhere, a link out); every file the
    screen lets a method read is there or below. An uploaded data set has no folder: refused."""
    if folder is None:
        raise ParameterError(f"The {name!r} parameter names files, which are read from the data set's folder; "
                             "the data set was uploaded: open it by its path to use the files beside it.")
    base = folder.resolve()

    def one(text: Any) -> Any:
        if not isinstance(text, str):
            return text  # not a path: the method's own rules refuse it
        path = (base / Path(text).expanduser()).resolve()
        if not path.is_relative_to(base):
            raise ParameterError(f"The {name!r} parameter names {text!r}, outside the data set's folder "
                                 f"{str(base)!r}; put the file in that folder (or below) and give its path.")
        return str(path)

    return {k: one(v) for k, v in value.items()} if isinstance(value, Mapping) else one(value)


def data_folder(session: Session) -> Path | None:
    """The folder of the session's data set's file (None for an upload, or no data set)."""
    source = None if session.data is None else session.data.source
    return None if source is None else source.parent


def build_method(name: str, texts: Mapping[str, str], folder: Path | None = None) -> Method:
    """The method ``name`` with the parameters the user typed (empty: the default), built by
    :func:`sdckit.methods.get_method`, whose rules raise :class:`ParameterError`. A mapping is
    read by :func:`parse_mapping`, a path parameter's files by :func:`within_folder` of
    ``folder`` (the data set's folder)."""
    known = {p.name: p for p in parameters(name)}
    values = {k: parse_mapping(k, v) if known[k].kind == "mapping" else parse_value(v)
              for k, v in texts.items() if k in known and v.strip()}
    for k, v in values.items():
        if known[k].listy and isinstance(v, str):
            values[k] = [v]
    for k in methods()[name].path_params & values.keys():
        values[k] = within_folder(k, values[k], folder)
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
    stated). A column the release recoded into categories of its own (global recoding's
    intervals) is compared with the original put on the release's scale, as the report does
    (:func:`sdckit.report.model.on_release_scale`). Its randomness is derived from the
    session's seed."""
    released = release.data
    columns = assessed_columns(original, released, release.schema)
    n = len(original)
    sample = n if n <= PERMUTATION_RECORDS else PERMUTATION_RECORDS
    try:
        if not columns:
            raise DataError("no numeric, ordinal or date quasi-identifier or confidential column is released")
        state = np.random.SeedSequence([parse_seed(seed), PERMUTATION_STREAM])
        scaled = on_release_scale(original[columns], released[columns], columns, release.schema, release.manifest)
        result = assess(scaled, released[columns], schema=release.schema,
                        records=PERMUTATION_RECORDS if n > PERMUTATION_RECORDS else None, seed=state)
    except (SdcError, ValueError, TypeError) as exc:
        return {"verdict": None, "note": " ".join(str(exc).split()), "sample": sample, "records": n,
                "columns": columns}
    v = result.verification
    return {"verdict": v.verdict, "p_value": float(v.p_value), "note": None, "sample": sample, "records": n,
            "columns": columns}


def linkage_figures(original: pd.DataFrame, release: Release, seed: int | str) -> dict[str, Any]:
    """Distance-based record linkage of the release to the original as the report measures it
    (:func:`sdckit.report.measures.linkage_section`: :func:`sdckit.risk.distance_linkage`, row i
    of the release being row i of the original) on the numeric columns of those the report
    assesses (:func:`sdckit.report.model.assessed_columns`), on a simple random sample of
    :data:`PERMUTATION_RECORDS` released records when there are more, as the verdict: the
    released records linked to their own original (``correct``, ties credited fractionally) of
    ``linked``, and their share ``rate`` (Domingo-Ferrer and Torra 2001). Its randomness is
    derived from the session's seed; a release it cannot link gives a one-line ``note``."""
    released = release.data
    numeric = set(shared_numeric_columns(original, released))
    columns = [c for c in assessed_columns(original, released, release.schema) if c in numeric]
    try:
        if not columns:
            raise DataError("no numeric quasi-identifier or confidential column is released")
        rng = np.random.default_rng(np.random.SeedSequence([parse_seed(seed), LINKAGE_STREAM]))
        result = distance_linkage(original, released, columns, sample=PERMUTATION_RECORDS, seed=rng)
    except (SdcError, ValueError, TypeError) as exc:
        return {"rate": None, "note": " ".join(str(exc).split()), "columns": columns, "records": len(released)}
    return {"rate": float(result.rate), "correct": float(result.correct), "linked": len(result.records),
            "sampled": result.sampled, "standard_error": float(result.standard_error), "note": None,
            "columns": columns, "records": len(released)}


def add_step(session: Session, method: Method, job: Job | None = None) -> Step:
    """Apply ``method`` on the result of the session's steps (the release of all steps so far
    plus this one, :func:`protect_steps`), measure the risk before and after, the utility and
    the verdict, and append the step. ``job`` follows the progress (and may cancel it: the
    session is then unchanged)."""
    loaded, roles = session.data, session.roles
    assert loaded is not None
    frame = loaded.frame
    methods = [*(s.method for s in session.steps), method]
    total = len(methods) + 4

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
    verdict = permutation_verdict(frame, release, session.seed)
    report(len(methods) + 3, "distance-based record linkage")
    step = Step(method, release, before, after, utility, verdict, linkage_figures(frame, release, session.seed))
    report(total, "done")
    session.steps.append(step)
    session.released = None
    return step


def undo_step(session: Session) -> Step | None:
    """Remove the last step (the one before it is the current release again); None if none."""
    session.released = None
    return session.steps.pop() if session.steps else None
