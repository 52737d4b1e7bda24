"""The report's sections on the classic measures: record linkage and interval disclosure, utility,
and the equivalence classes on the quasi-identifiers (with the unique combinations released
unchanged). Each returns its :class:`~sdckit.report.section.Section` and its JSON figures; the
sample sizes on large data are :mod:`sdckit.report.model`'s, passed in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdckit.core.errors import SdcError
from sdckit.core.schema import Role, Schema
from sdckit.report import figures
from sdckit.report.section import Section, fmt, svg
from sdckit.risk import distance_linkage, equivalence_classes, interval_disclosure
from sdckit.utility import (
    correlation_difference,
    discernibility,
    moment_differences,
    quantile_differences,
    utility_summary,
)


def linkage_section(original: pd.DataFrame, released: pd.DataFrame, cols: list[str], p: float,
                    rng: np.random.Generator, sample: int) -> tuple[Section, dict[str, Any]]:
    rows, data, notes = [], {}, []
    try:
        dbrl = distance_linkage(original, released, cols, sample=sample, seed=rng)
        value = f"{fmt(100 * dbrl.rate, 3)}%"
        if dbrl.sampled is not None:
            value += (f" (estimated from {dbrl.sampled:,} of {len(released):,} released records, "
                      f"standard error {fmt(100 * dbrl.standard_error, 2)} points)")
        rows.append(("distance-based record linkage: released records linked to their original", value))
        data["distance_linkage"] = dbrl.to_dict()
    except SdcError as exc:
        notes.append(f"Distance-based record linkage not computed: {exc}")
    for method in ("rank", "sd"):
        try:
            inter = interval_disclosure(original, released, cols, p=p, method=method)
            label = f"interval disclosure ({'rank' if method == 'rank' else 'standard-deviation'} intervals, p = {p:g}%)"
            rows.append((label, f"{fmt(100 * inter.share, 3)}%"))
            data[f"interval_disclosure_{method}"] = inter.to_dict()
        except SdcError as exc:
            notes.append(f"Interval disclosure ({method}) not computed: {exc}")
    section = Section("linkage.html", "Record linkage and interval disclosure", "linkage", {"rows": rows},
                      note=" ".join(notes) or None)
    return section, data


def utility_section(original: pd.DataFrame, released: pd.DataFrame, cols: list[str],
                    rng: np.random.Generator, pmse_sample: int) -> tuple[Section, dict[str, Any]]:
    moments = moment_differences(original, released, cols)
    summary = utility_summary(original, released, cols, moments=moments, pmse_sample=pmse_sample, seed=rng)
    pmse_label = "propensity pMSE (logistic)"
    if summary["pmse"]["sampled"] is not None:
        pmse_label += f", fitted on a random sample of {summary['pmse']['sampled']:,} records"
    bars = pd.DataFrame({
        "standardized mean difference": moments["standardized_mean_difference"],
        "log variance ratio": np.log(moments["var_ratio"].replace(0, np.nan)),
    }).replace([np.inf, -np.inf], np.nan).fillna(0.0)
    sd = np.sqrt(moments["var_original"].to_numpy(float))
    quant = quantile_differences(original, released, cols).div(np.where(sd > 0, sd, 1.0), axis=0)
    quant.columns = [f"q{int(round(100 * q))}" for q in quant.columns]
    ctx: dict[str, Any] = {
        "moments_figure": svg(figures.column_bars(bars, ylabel="released vs original")),
        "quantile_figure": svg(figures.column_bars(quant, ylabel="quantile difference / sd")),
        "table": [
            (c, fmt(r.standardized_mean_difference), fmt(r.var_ratio), *(fmt(v) for v in quant.loc[c]))
            for c, r in moments.iterrows()
        ],
        "quantile_names": list(quant.columns),
        "rows": [
            ("IL1s (scaled mean absolute deviation)", fmt(summary["il1"])),
            ("mean |standardized mean difference|", fmt(summary["mean_abs_standardized_mean_difference"])),
            ("mean |log variance ratio|", fmt(summary["mean_abs_log_var_ratio"])),
            ("mean |correlation difference|", fmt(summary["correlation"])),
            (pmse_label, fmt(summary["pmse"]["pmse"])),
            ("pMSE / its null expectation", fmt(summary["pmse"]["ratio"])),
        ],
        "corr_figure": None,
    }
    if len(cols) > 1:
        ctx["corr_figure"] = svg(figures.heatmap(correlation_difference(original, released, cols),
                                                 title="released minus original correlation"))
    return Section("utility.html", "Utility: what the release preserves", "utility", ctx), summary


def classes_section(original: pd.DataFrame, released: pd.DataFrame, schema: Schema | None) -> tuple[Section, dict[str, Any] | None]:
    """Equivalence classes on *every* quasi-identifier of the release (numeric ones by their exact
    values), and the unique combinations released exactly as some original record has them."""
    title = "Equivalence classes on the quasi-identifiers"
    quasi = tuple(q for q in (schema.with_role(Role.QUASI) if schema is not None else ()) if q in released.columns)
    if not quasi:
        return Section("classes.html", title, "classes", {},
                       note="The schema declares no quasi-identifier in the release, so there are no equivalence classes to count."), None
    risk = equivalence_classes(released, quasi)
    unchanged = unchanged_uniques(original, released, quasi, risk.sizes.to_numpy())
    suppressed = max(len(original) - len(released), 0)
    cost = discernibility(risk.labels.to_numpy(), n_suppressed=suppressed, n_total=max(len(original), len(released)))
    ctx = {
        "figure": svg(figures.class_sizes(risk.size_counts)),
        "quasi": ", ".join(quasi),
        "rows": [("columns covered", ", ".join(quasi)),
                 ("records", fmt(len(risk.sizes))), ("equivalence classes", fmt(risk.n_classes)),
                 ("sample uniques (class of size 1)", f"{fmt(risk.uniques)} ({fmt(100 * risk.share_unique, 3)}%)"),
                 ("unique combinations released unchanged (as in the original)", fmt(unchanged)),
                 ("smallest class (k)", fmt(risk.k)), ("records in classes smaller than 5", fmt(risk.below(5))),
                 ("discernibility (classes' squared sizes, n per missing record)", fmt(cost))],
    }
    return Section("classes.html", title, "classes", ctx), {
        **risk.to_dict(), "columns": list(quasi), "unchanged_uniques": unchanged,
        "discernibility": cost, "records_missing": suppressed}


def unchanged_uniques(original: pd.DataFrame, released: pd.DataFrame, quasi: Sequence[str], sizes: np.ndarray) -> int:
    """Released records alone in their class whose quasi-identifier combination is exactly one
    that the original data holds: an intruder who knows it finds the record (issue 12 §3)."""
    if not all(q in original.columns for q in quasi):
        return 0
    alone = released.loc[sizes == 1, list(quasi)]
    if alone.empty:
        return 0
    keys = [c for c in quasi]
    left = alone.astype(object).where(alone.notna(), None)
    right = original[keys].astype(object).where(original[keys].notna(), None).drop_duplicates()
    try:
        merged = left.merge(right, on=keys, how="inner")
    except (TypeError, ValueError):  # columns of incomparable kinds cannot match
        return 0
    return int(len(merged))
