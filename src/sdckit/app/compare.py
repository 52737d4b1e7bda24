"""The Compare screen's calls: candidate recipes kept from the Protect screen's steps, compared on
one risk-utility plot, and a step's parameter tuned to a target (issue 31, screen 4: ``compare``
and ``tune``).

The figures are :func:`sdckit.compare.compare` and :func:`sdckit.tune.tune` — the calls
``sdckit compare`` and ``sdckit tune`` make — drawn by their own report models
(:func:`sdckit.compare.report.comparison_report`, :func:`sdckit.tune.tune_report`). Both run on
a simple random sample of :data:`COMPARE_RECORDS` records when the data set is larger (the page
says so), with randomness drawn from a stream of the session's seed, so that a comparison repeats
exactly within the session and never reuses the release's own randomness.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdckit.app.jobs import Job
from sdckit.app.protect import add_step
from sdckit.app.session import Session, image, schema_of
from sdckit.compare import Candidate, compare
from sdckit.compare.report import comparison_report
from sdckit.core.errors import ParameterError
from sdckit.core.random import parse_seed
from sdckit.tune import TUNABLE, tune, tune_report

#: Comparisons and tuning run on at most this many records (a stated simple random sample).
COMPARE_RECORDS = 2000
#: Stream of the session's seed that comparisons and tuning draw from (not the release's).
COMPARE_STREAM = 0xC0A9A4E
#: Longest label of a candidate.
MAX_LABEL = 60


@dataclass(frozen=True)
class Shown:
    """A comparison or tuning as the page shows it: the report model's title line, the table's
    headings and rows, the figure as a data URI (an ``<img>``: the page's Content-Security-Policy
    allows no inline style, which matplotlib's SVG carries) and the sample it ran on."""

    subtitle: str
    headings: tuple[str, ...]
    rows: list[tuple[str, ...]]
    figure: str
    sample: int
    records: int
    result: Any = dataclasses.field(repr=False, default=None)
    step: int | None = None  # the tuned step (None: a comparison)
    steps: tuple[Any, ...] = ()  # the session's step methods when it was tuned


def keep_candidate(session: Session, label: str) -> Candidate:
    """Keep the session's steps as a candidate named ``label`` (new, 1 to :data:`MAX_LABEL`
    characters); the steps stay as they are."""
    text = " ".join((label or "").split())
    if not session.steps:
        raise ParameterError("Apply at least one step first: a candidate is the list of steps applied.")
    if not text or len(text) > MAX_LABEL:
        raise ParameterError(f"Name the candidate (1 to {MAX_LABEL} characters), e.g. 'noise 0.5'.")
    if any(c.label == text for c in session.candidates):
        raise ParameterError(f"A candidate is already named {text!r}; choose another name.")
    candidate = Candidate(text, tuple(s.method for s in session.steps))
    session.candidates.append(candidate)
    return candidate


def drop_candidate(session: Session, label: str) -> None:
    """Forget the candidate ``label`` (nothing else changes)."""
    session.candidates[:] = [c for c in session.candidates if c.label != label]


def sample(session: Session) -> tuple[pd.DataFrame, np.random.Generator]:
    """The records a comparison runs on — all of them, or a simple random sample of
    :data:`COMPARE_RECORDS` — and the generator of the session's comparison stream (a fresh one
    each call: the same inputs give the same figures)."""
    assert session.data is not None
    rng = np.random.default_rng(np.random.SeedSequence([parse_seed(session.seed), COMPARE_STREAM]))
    frame = session.data.frame
    if len(frame) > COMPARE_RECORDS:
        rows = np.sort(rng.choice(len(frame), COMPARE_RECORDS, replace=False))
        frame = frame.iloc[rows].reset_index(drop=True)
    return frame, rng


def _progress(job: Job | None):
    return None if job is None else (lambda done, total, label="": job.update(done, total, str(label)))


def check_comparable(session: Session) -> None:
    """Refuse (one line) a comparison of fewer than two candidates."""
    if len(session.candidates) < 2:
        raise ParameterError("Keep at least two candidates to compare (the Protect screen's steps, named).")


def run_comparison(session: Session, job: Job | None = None) -> Shown:
    """:func:`sdckit.compare.compare` of the session's candidates (at least two) on
    :func:`sample`, with the confirmed roles' schema; shown through
    :func:`~sdckit.compare.report.comparison_report`, with a column of the share of the verified
    cells suppressed (:attr:`~sdckit.compare.CandidateResult.suppressed`) when a candidate
    suppressed any."""
    check_comparable(session)
    frame, rng = sample(session)
    comparison = compare(frame, list(session.candidates), schema=schema_of(frame, session.roles), seed=rng,
                         progress=_progress(job))
    report = comparison_report(comparison)  # once: it draws the figure
    section = report.sections[0]
    headings = ("candidate", "H", "H null", "p-value", "utility loss", "plausibly deniable")
    rows = list(section.context["rows"])
    if any(r.suppressed > 0 for r in comparison.results):  # local suppression: the share of cells it left out
        headings += ("cells suppressed",)
        rows = [(*row, f"{r.suppressed:.2%}") for row, r in zip(rows, comparison.results, strict=True)]
    return Shown(report.subtitle, headings, rows, image(section.context["figure"]), len(frame),
                 len(session.data.frame), comparison)


def tunable_steps(session: Session) -> list[tuple[int, str, str]]:
    """The steps whose method has a known tunable parameter: (index, method, parameter)."""
    return [(i, s.method.name, TUNABLE[s.method.name].param) for i, s in enumerate(session.steps)
            if s.method.name in TUNABLE]


def tuning_request(session: Session, step: str, target: str) -> tuple[int, float]:
    """The Compare screen's tuning form, checked: a step of :func:`tunable_steps` (its index as
    text) and a target p-value in (0, 1)."""
    try:
        index = int(step)
    except ValueError:
        index = -1
    if not any(i == index for i, _, _ in tunable_steps(session)):
        raise ParameterError("Choose a step whose method can be tuned (noise, multiplicative noise, rank swapping, "
                             "microaggregation, (k, epsilon)-anonymity).")
    try:
        level = float(target)
    except ValueError:
        level = float("nan")
    if not 0 < level < 1:
        raise ParameterError(f"The target p-value must be a number in (0, 1), e.g. 0.05. Got {target!r} instead.")
    return index, level


def tuned(session: Session) -> Shown:
    """The session's last tuning, if it found a value that can still be applied (else one line)."""
    shown = session.compared
    if not isinstance(shown, Shown) or shown.step is None:
        raise ParameterError("Tune a step first.")
    if shown.result.value is None:
        raise ParameterError("No value passed in the search range: nothing to apply.")
    if tuple(s.method for s in session.steps) != shown.steps:
        raise ParameterError("The steps changed since the tuning; tune again.")
    return shown


def run_tuning(session: Session, step: int, target: float, job: Job | None = None) -> Shown:
    """:func:`sdckit.tune.tune` of step ``step``'s parameter (its default range) so that the
    session's steps pass the verification at level ``target``, on :func:`sample`; shown through
    :func:`~sdckit.tune.tune_report`."""
    tuning_request(session, str(step), str(target))
    frame, rng = sample(session)
    spec = TUNABLE[session.steps[step].method.name]
    high = min(spec.high, len(frame)) if spec.integer else None  # a group size k is at most the records
    result = tune(frame, [s.method for s in session.steps], step=step, target=target, high=high,
                  schema=schema_of(frame, session.roles), seed=rng, progress=_progress(job))
    report = tune_report(result)
    section = report.sections[0]
    return Shown(section.context["verdict"], (result.param, "H", "H null", "p-value", "utility loss", "passes"),
                 list(section.context["rows"]), image(section.context["figure"]), len(frame),
                 len(session.data.frame), result, step, tuple(s.method for s in session.steps))


def apply_tuned(session: Session, shown: Shown, job: Job | None = None) -> None:
    """Set the tuned step's parameter to the value found and apply the steps from there again
    (:func:`sdckit.app.protect.add_step`, so each is measured as on the Protect screen). Refused
    when nothing passed or the steps changed since the tuning; a cancel leaves the steps as they
    were."""
    result, step = shown.result, shown.step
    original = list(session.steps)
    methods = [s.method for s in original]
    if tuple(methods) != shown.steps or step is None or result.value is None:
        raise ParameterError("The steps changed since the tuning; tune again.")
    methods[step] = dataclasses.replace(methods[step], **{result.param: result.value})
    session.steps = original[:step]
    try:
        for method in methods[step:]:
            add_step(session, method, job)
    except BaseException:  # cancelled or refused: the session keeps its steps
        session.steps = original
        raise
    session.compared = None
