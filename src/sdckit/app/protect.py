"""The Protect screen's calls: the registry's methods and their parameter rules, a step applied
with the session's seed through :func:`sdckit.pipeline.protect`, and what is measured after it
(risk, utility, the permutation paradigm's verdict), with undo (issue 31, screen 4)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.app.session import Loaded, Session, Step, risk_figures, schema_of
from sdckit.core.errors import DataError, ParameterError, SdcError
from sdckit.core.method import Method
from sdckit.core.params import describe_rule
from sdckit.core.random import parse_seed
from sdckit.methods import available, get_method
from sdckit.permutation import assess
from sdckit.pipeline import ProgressCallback, Release, protect
from sdckit.report.model import assessed_columns
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
