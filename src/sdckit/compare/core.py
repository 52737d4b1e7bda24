"""Compare methods or parameter values on the same data and seed: risk against utility loss.

Risk is the maximum-knowledge intruder's verification (seed 000 section 5.2 with the two
corrections of DESIGN.md section 3): the Hellinger distance between the permutation-distance
distributions of the original records and of random records drawn from the null model, its
null baseline (what a release carrying no link would give) and its p-value. Utility loss is a
measure of :data:`sdckit.utility.MEASURES` (IL1s by default). Every candidate is run on the
same data with the same seed, and verified with the same random records, so that differences
come from the methods alone (seed 001's comparison).

Suppressed cells (issue 31). Local suppression sets key values to missing, and the ranks of
the permutation paradigm need complete data. What is measured for a suppressed value is
nothing — its record is left out:

* a default column (``columns`` not given) that the release suppressed in every record is not
  released at all and is left out, as a column the release drops is;
* the release is then measured on its **complete record pairs** — the records that have every
  verified column in both the original and the release
  (:func:`sdckit.permutation.sample.complete_pairs`) — as the release of those records alone,
  the sub-release of DESIGN.md section 3 ("Scale"): ranks, distances, the null model and the
  p-value are those of the sub-release, and the utility loss is measured on the same records.

The suppressed records are thus not decoys for the intruder; among fewer released records a
record is more easily linked, so the sub-release tends to look riskier than the whole. The
values released are measured, not the suppression's own loss of information (suppression
alone has a utility loss of 0): that is ``suppressed``, the share of the verified columns'
released cells that are missing (each run keeps ``cells_suppressed``, ``records_assessed`` and
``records_suppressed``, the pairs left out). Fewer than 2 complete pairs is a one-line
:class:`~sdckit.core.errors.DataError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdckit.permutation.sample import complete_pairs
from sdckit.permutation.verify import ALPHA, MAX_REPLICATES, N_RANDOM
from sdckit.core.errors import ParameterError
from sdckit.core.method import Method
from sdckit.core.params import Interval, Options, check_param
from sdckit.core.random import RandomState, as_generator, derive_seed, renamed_seed
from sdckit.core.result import Result, plain
from sdckit.core.schema import Schema
from sdckit.pipeline import protect
from sdckit.report.columns import on_release_scale
from sdckit.report.settings import RULES as REPORT_RULES
from sdckit.utility.columns import shared_numeric_columns
from sdckit.utility.summary import MEASURES, utility_loss

#: Replicates of each run's verification. A comparison judges a candidate by its p-value averaged
#: over the seeds (new data each time), so each run needs an estimate, not a decision: 32
#: independent replicates give it a binomial error of at most 0.09 per run (0.04 over 5 seeds),
#: at about the cost of the earlier 64 batches of 50 dependent null samples (issue 27).
COMPARE_REPLICATES = 32

#: Called after each evaluated (candidate, seed) with (done, total, label).
Progress = Callable[[int, int, str], Any]


@dataclass(frozen=True)
class Candidate:
    """One entry of a comparison: a label and the methods applied in order."""

    label: str
    methods: tuple[Method, ...]


@dataclass(frozen=True)
class CandidateResult(Result):
    """Risk and utility of one candidate: means over the seeds, and each seed's values."""

    label: str
    methods: tuple[dict[str, Any], ...]
    hellinger: float
    hellinger_null: float
    p_value: float
    utility_loss: float
    alpha: float
    runs: tuple[dict[str, float], ...] = field(default_factory=tuple)
    #: Mean share of the verified columns' released cells that are suppressed (missing; issue 31).
    suppressed: float = 0.0

    @property
    def plausibly_deniable(self) -> bool:
        """The mean p-value over the seeds is above ``alpha``."""
        return self.p_value > self.alpha

    def to_dict(self) -> dict[str, Any]:
        """The fields with the derived excess Hellinger, flagged share and verdict."""
        return plain({
            "label": self.label,
            "methods": list(self.methods),
            "hellinger": self.hellinger,
            "hellinger_null": self.hellinger_null,
            "excess_hellinger": self.hellinger - self.hellinger_null,
            "p_value": self.p_value,
            "flagged_share": float(np.mean([r["p_value"] <= self.alpha for r in self.runs])) if self.runs else None,
            "utility_loss": self.utility_loss,
            "suppressed": self.suppressed,
            "plausibly_deniable": self.plausibly_deniable,
            "runs": self.runs,
        })

    #: Column headings of :meth:`summary` (a row of the comparison table).
    summary_columns = ("candidate", "H", "H null", "p-value", "utility loss", "deniable")

    def summary(self) -> list[tuple[str, ...]]:
        """One row of the comparison table: label, H, H null, p-value, utility loss, deniable."""
        return [(self.label, f"{self.hellinger:.3f}", f"{self.hellinger_null:.3f}", f"{self.p_value:.3f}",
                 f"{self.utility_loss:.4f}", "yes" if self.plausibly_deniable else "NO")]


@dataclass(frozen=True)
class Comparison(Result):
    """The risk-utility table of a comparison."""

    results: tuple[CandidateResult, ...]
    records: int
    seeds: int
    settings: dict[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per candidate: hellinger, hellinger_null, excess, p_value, utility_loss, verdict."""
        rows = [r.to_dict() for r in self.results]
        return pd.DataFrame(rows).drop(columns=["methods", "runs"]).set_index("label")

    def to_dict(self) -> dict[str, Any]:
        """Records, seeds, settings and each candidate's figures by label."""
        return plain({
            "records": self.records,
            "seeds": self.seeds,
            "settings": self.settings,
            "methods": {r.label: r for r in self.results},
        })

    summary_columns = CandidateResult.summary_columns

    def summary(self) -> list[tuple[str, ...]]:
        """One row per candidate (:meth:`CandidateResult.summary`)."""
        return [row for r in self.results for row in r.summary()]


def check_settings(*, null: str, n_random: int, n_null: int, alpha: float, utility: str, seeds: int) -> None:
    """Check a comparison's (or a tuning's) settings with the shared parameter template."""
    for name, value in (("null", null), ("n_random", n_random), ("n_null", n_null), ("alpha", alpha)):
        check_param("compare", name, value, REPORT_RULES[name])
    check_param("compare", "utility", utility, Options(tuple(MEASURES)))
    check_param("compare", "seeds", seeds, Interval(int, 1, None))


@renamed_seed()
def evaluate_release(
    original: pd.DataFrame,
    released: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    null: str = "copula",
    n_random: int = N_RANDOM,
    n_null: int = 50,
    utility: str = "il1",
    schema: Any = None,
    alpha: float = ALPHA,
    max_replicates: int = MAX_REPLICATES,
    seed: RandomState = None,
) -> dict[str, Any]:
    """Risk (the verification) and utility loss of one release of ``original``.

    A column the release recoded into categories of its own (global recoding's intervals, a
    hierarchy's levels: an order in ``schema`` that the original's values are not in) is
    verified with the original put on the release's scale, as the report does
    (:func:`sdckit.report.columns.on_release_scale`); the utility loss is then measured on the
    default columns that stayed numeric in both (all of ``columns`` when they are given).
    A release with suppressed (missing) cells in those columns is measured on its complete
    record pairs, a default column suppressed in every record left out (see the module
    docstring): ``suppressed`` is the share of the verified cells that are missing
    (``cells_suppressed`` of them), ``records_assessed`` and ``records_suppressed`` count the
    pairs kept and left out.

    Returns ``hellinger``, ``hellinger_null``, ``p_value``, ``utility_loss``, and the
    verification's sequential test at ``alpha`` with at most ``max_replicates`` replicates:
    ``verdict`` (``"deniable"``, ``"flagged"`` or ``"borderline"``), ``p_value_low``,
    ``p_value_high`` (its 99% interval) and ``replicates``.
    """
    from sdckit.permutation import verify_linkage
    from sdckit.permutation.columns import resolve_columns

    # Default: the columns both have that can be ranked (nominal ones left out; issue 12 §5).
    cols = list(columns) if columns is not None else resolve_columns(original, released, None, schema)
    # Suppressed (missing) cells (issue 31): a column suppressed in every record is not released
    # (left out by default, like a column the release drops); the others are measured on the
    # complete record pairs, as a sub-release.
    cells = int(released[cols].isna().to_numpy().sum())
    share = cells / (len(released) * len(cols))
    if columns is None:
        cols = [c for c in cols if released[c].notna().any()] or cols
    original, released, left_out = complete_pairs(original, released, cols)
    scaled = on_release_scale(original, released, cols, schema) if isinstance(schema, Schema) else original
    verification = verify_linkage(scaled, released, cols, null=null, n_random=n_random, n_null=n_null,
                                  alpha=alpha, max_replicates=max_replicates, schema=schema,
                                  seed=seed)
    numeric = set(shared_numeric_columns(original, released))
    measured = cols if columns is not None else [c for c in cols if c in numeric] or cols
    return {
        "cells_suppressed": cells,
        "suppressed": share,
        "records_assessed": len(original),
        "records_suppressed": left_out,
        "hellinger": float(verification.hellinger),
        "hellinger_null": float(verification.hellinger_null),
        "p_value": float(verification.p_value),
        "utility_loss": utility_loss(original, released, measured, measure=utility),
        "verdict": verification.verdict,
        "p_value_low": float(verification.p_value_low),
        "p_value_high": float(verification.p_value_high),
        "replicates": int(verification.replicates),
    }


@renamed_seed()
def compare(
    data: pd.DataFrame | Callable[[np.random.Generator], pd.DataFrame],
    candidates: Sequence[Candidate],
    *,
    seeds: int = 1,
    schema: Any = None,
    columns: Sequence[str] | None = None,
    null: str = "copula",
    n_random: int = N_RANDOM,
    n_null: int = 50,
    alpha: float = 0.05,
    utility: str = "il1",
    seed: RandomState = None,
    progress: Progress | None = None,
) -> Comparison:
    """Run every candidate on the same data and seeds; measure risk and utility loss.

    Parameters
    ----------
    data : DataFrame or callable
        The original data, or a function of a Generator that simulates it (then each seed
        draws new data, the same for every candidate).
    candidates : sequence of Candidate
        Distinct labels; each candidate's methods are applied in order with :func:`protect`.
    seeds : int
        Repetitions; the table holds means over them (each run is kept in ``runs``).
    schema : Schema or mapping, optional
        Passed to :func:`protect` (roles choose the columns the methods work on).
    columns : sequence of str, optional
        Columns verified and measured; default every column the release shares with the data.
    null, n_random, n_null
        The verification's settings (:func:`sdckit.permutation.verify_linkage`).
    alpha : float
        A candidate is plausibly deniable when its mean p-value over the seeds exceeds ``alpha``
        (each run's verification draws :data:`COMPARE_REPLICATES` replicates; its own
        sequential verdict is kept in ``runs``).
    utility : str
        The utility-loss measure (:data:`sdckit.utility.MEASURES`).
    seed : int or Generator
        Seeds everything: simulated data, methods and verification (never recorded).
    """
    check_settings(null=null, n_random=n_random, n_null=n_null, alpha=alpha, utility=utility, seeds=seeds)
    if not candidates:
        raise ParameterError("compare() needs at least one candidate.")
    labels = [c.label for c in candidates]
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise ParameterError(f"Candidate labels must be distinct; {dup!r} is used twice.")
    master = as_generator(seed, secret=False)
    runs: dict[str, list[dict[str, float]]] = {c.label: [] for c in candidates}
    total, done, n_records = seeds * len(candidates), 0, 0
    for s in range(seeds):
        data_seed, method_seed, verify_seed = (derive_seed(master) for _ in range(3))
        original = data(np.random.default_rng(data_seed)) if callable(data) else data
        n_records = len(original)
        for cand in candidates:
            release = protect(original, list(cand.methods), schema=schema, seed=method_seed)
            runs[cand.label].append(evaluate_release(
                original, release.data, columns=columns, null=null, n_random=n_random, n_null=n_null,
                utility=utility, schema=release.schema, alpha=alpha, max_replicates=COMPARE_REPLICATES,
                seed=verify_seed,
            ))
            done += 1
            if progress is not None:
                progress(done, total, cand.label)
    results = tuple(
        CandidateResult(
            label=cand.label,
            methods=tuple(m.to_manifest() for m in cand.methods),
            **{key: float(np.mean([r[key] for r in runs[cand.label]]))
               for key in ("hellinger", "hellinger_null", "p_value", "utility_loss")},
            alpha=float(alpha),
            runs=tuple(runs[cand.label]),
            suppressed=float(np.mean([r["suppressed"] for r in runs[cand.label]])),
        )
        for cand in candidates
    )
    settings = {"null": null, "n_random": n_random, "n_null": n_null, "alpha": alpha, "utility": utility,
                "columns": None if columns is None else list(columns)}
    return Comparison(results, n_records, seeds, settings)
