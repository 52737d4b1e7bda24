"""The report's model: compute every measure, then describe each section for its template.

Reports are built compute -> model -> render (DESIGN.md section 2). This module does the first
two steps: :func:`build_report` runs the risk and utility measures on an original and a
released data set and returns a :class:`Report` — a title, an ordered list of
:class:`Section` values (a template name and the aggregates it shows) and a JSON-ready
summary. Rendering is :mod:`sdckit.report.render`'s job.

Non-disclosive by default: a section holds only aggregates (distributions, per-column
statistics, counts, the manifest) — never a record of the original data. A measure that cannot
be computed for a release (e.g. record linkage on a release with other records) leaves a note
in its section instead of failing the whole report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from sdckit.core.errors import ParameterError, SdcError
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.schema import ORDERED_KINDS, Role, Schema
from sdckit.permutation.sample import sample_pairs
from sdckit.permutation.verify import MAX_REPLICATES
from sdckit.report import figures
from sdckit.report.settings import DEFAULTS, check_settings
from sdckit.report.verdict import (
    BORDERLINE,
    DENIABLE,
    DP_CLAIMED,
    NOT_ASSESSED,
    NOT_DENIABLE,
    Verdict,
    verification_state,
)
from sdckit.risk import categorical_quasi, distance_linkage, equivalence_classes, interval_disclosure, permutation_risk
from sdckit.risk.permutation import PermutationRisk
from sdckit.utility import (
    correlation_difference,
    discernibility,
    moment_differences,
    quantile_differences,
    utility_summary,
)
from sdckit.utility.columns import shared_numeric_columns

Progress = Callable[[int, int, str], Any]

DEFAULT_SETTINGS = DEFAULTS


@dataclass(frozen=True)
class Section:
    """One section of the report: its template, title, anchor and what it shows."""

    template: str
    title: str
    anchor: str
    context: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    #: The section's figures are aggregates of the original data: not differentially private.
    from_original: bool = False


#: What the permutation sections say when computed on a sample of record pairs (issue 28).
SUB_RELEASE_NOTE = (
    "every figure here is that of the release of the sampled records alone, computed exactly on "
    "them; ranks and distances are on its scale. The p-value's Monte-Carlo error (standard error, "
    "99% interval) is that of the sub-release's test; as an estimate of the whole release's "
    "p-value it carries a further sampling error that is not stated. Distance linkage is easier "
    "among fewer records, so the sub-release tends to look riskier than the whole."
)
#: What a section computed from the original data says of itself (issue 19 item 2).
NOT_DP_LABEL = "Computed from the original data: not differentially private."
#: The note of a report on a release that claims differential privacy.
DP_RELEASE_NOTE = (
    "This release claims differential privacy, so this report shows no measure of the original "
    "data: every such aggregate (linkage rates, variance ratios, quantile differences, class "
    "counts, the permutation verification) would be a further, unaccounted disclosure. Only "
    "the transparency section (methods and parameters) is shown."
)


def release_claims_dp(manifest: Mapping[str, Any] | None) -> bool:
    """Whether the manifest's release claims differential privacy (every method does)."""
    return bool(manifest) and bool(manifest.get("claims_dp", False))


@dataclass(frozen=True)
class Report:
    """A report ready to render: title, sections in order, the JSON-ready figures and, for a
    release's report (:func:`build_report`), its :class:`Verdict`."""

    title: str
    subtitle: str
    sections: tuple[Section, ...]
    data: dict[str, Any]
    verdict: Verdict | None = None


def svg(text: str) -> Markup:
    """Mark an SVG drawn by :mod:`sdckit.report.figures` as safe to inline (matplotlib escapes
    every text it writes)."""
    return Markup(text)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        v = float(value)
        if not np.isfinite(v):
            return "inf" if v > 0 else ("-inf" if v < 0 else "n/a")
        return f"{v:.{digits}g}" if abs(v) < 1e-3 and v != 0 else f"{v:,.{digits}f}"
    return str(value)


def assessed_columns(original: pd.DataFrame, released: pd.DataFrame, schema: Schema | None) -> list[str]:
    """Columns for the permutation assessment: shared, ordered kind; the quasi-identifiers and
    confidential ones when the schema declares roles."""
    shared = [c for c in released.columns if c in original.columns]
    if schema is None:
        numeric = set(shared_numeric_columns(original, released))
        return [c for c in shared if c in numeric]
    roles = {Role.QUASI, Role.CONFIDENTIAL}
    chosen = set(schema.select(roles, ORDERED_KINDS))
    return [c for c in shared if c in chosen]


# ----------------------------------------------------------------------------- sections
def _permutation_sections(risk: PermutationRisk, records: str | None = None) -> list[Section]:
    """The distances, plausibility and displacement sections; ``records`` is the sentence on the
    sample of record pairs they were computed on, if any (:data:`PERMUTATION_RECORDS`)."""
    p, q = risk.original_distribution, risk.random_distribution
    verdict = verification_state(risk)
    pairs = [("record pairs assessed (a simple random sample: the sub-release)", records)] if records else []
    dist = Section("distances.html", "Permutation distances: original vs random records", "distances", {
        "figure": svg(figures.distance_distributions(p, q)),
        "rows": [
            ("Hellinger distance H(P, Q)", _fmt(risk.hellinger)),
            ("null baseline of H (no link at all)", _fmt(risk.hellinger_null)),
            ("excess over the baseline", _fmt(risk.excess_hellinger)),
            (f"p-value ({risk.null} null)", _fmt(risk.p_value)),
            ("Monte-Carlo standard error of the p-value", _fmt(risk.p_value_se)),
            ("99% interval of the p-value (Clopper-Pearson)", f"{_fmt(risk.p_value_low)} - {_fmt(risk.p_value_high)}"),
            ("Monte-Carlo replicates (sequential test)", _fmt(risk.replicates)),
            (f"verdict at level {_fmt(risk.alpha)}", verdict),
            ("data-set-level permutation distance" + (" (minimum over the sample: an upper bound)"
                                                      if risk.sampled is not None else ""), _fmt(risk.dataset_distance)),
        ] + pairs + ([("original records linked and verified (a simple random sample)",
               f"{risk.sampled:,} of {len(risk.displacement) if risk.displacement is not None else risk.sampled:,}")]
             if risk.sampled is not None else []),
        "null": risk.null, "deniable": risk.plausibly_deniable,
    }, note=records and f"Computed on {records}: {SUB_RELEASE_NOTE}")
    plaus = Section("plausibility.html", "Per-record plausibility of the intruder's matches", "plausibility", {
        "figure": svg(figures.plausibility(risk.p_random, risk.alpha)),
        "share": _fmt(100 * risk.share_not_random, 3), "alpha": _fmt(risk.alpha),
        "count": int((risk.p_random < risk.alpha).sum()), "records": len(risk.p_random),
    })
    if records:
        plaus = replace(plaus, note=f"Computed on {records} (the sub-release).")
    sections = [dist, plaus]
    if risk.displacement is not None:
        d = risk.displacement
        sections.append(Section("displacement.html", "Rank displacement (record-level identity disclosure)", "displacement", {
            "figure": svg(figures.integer_histogram(d, xlabel="rank displacement max_j |rank(x_ij) - rank(y_ij)|")),
            "rows": [("median displacement", _fmt(float(d.median()))), ("records displaced by at most 1 rank", _fmt(int((d <= 1).sum()))),
                     ("records not displaced at all", _fmt(int((d == 0).sum())))],
            "linkage": [(k.replace("_", " ") + (" (in the sample)" if risk.sampled is not None else ""), _fmt(v))
                        for k, v in (risk.linkage or {}).items()],
        }, note=records and f"Computed on {records} (the sub-release): ranks on its scale."))
    return sections


#: Above this many records the report estimates distance-based record linkage, the intruder's
#: linkage and the verification from a random sample of this many (the estimates carry their
#: standard errors; issue 12 section 3, issue 17) ...
LINKAGE_SAMPLE = 20_000
#: ... (distance-based record linkage in many dimensions: this many released records) ...
DBRL_SAMPLE = 2_000
#: ... pMSE is fitted on at most this many records of each data set ...
PMSE_SAMPLE = 50_000
#: ... and the verification's sequential test then draws at most this many replicates (each links
#: 20,000 random records against every released one; enough to flag a release whose p-value is 0,
#: which takes 173 replicates at the default risk; issue 27).
LARGE_DATA_REPLICATES = 200
#: Above this many records the permutation-paradigm sections are computed on a simple random
#: sample of this many record pairs, the sub-release (issue 28: ranking and a KD-tree on 10^7
#: records took 10 minutes and most of 5.8 GB); the sections say so.
PERMUTATION_RECORDS = 1_000_000


def _linkage_section(original: pd.DataFrame, released: pd.DataFrame, cols: list[str], p: float,
                     rng: np.random.Generator) -> tuple[Section, dict[str, Any]]:
    rows, data, notes = [], {}, []
    try:
        dbrl = distance_linkage(original, released, cols, sample=DBRL_SAMPLE, seed=rng)
        value = f"{_fmt(100 * dbrl.rate, 3)}%"
        if dbrl.sampled is not None:
            value += (f" (estimated from {dbrl.sampled:,} of {len(released):,} released records, "
                      f"standard error {_fmt(100 * dbrl.standard_error, 2)} points)")
        rows.append(("distance-based record linkage: released records linked to their original", value))
        data["distance_linkage"] = dbrl.to_dict()
    except SdcError as exc:
        notes.append(f"Distance-based record linkage not computed: {exc}")
    for method in ("rank", "sd"):
        try:
            inter = interval_disclosure(original, released, cols, p=p, method=method)
            label = f"interval disclosure ({'rank' if method == 'rank' else 'standard-deviation'} intervals, p = {p:g}%)"
            rows.append((label, f"{_fmt(100 * inter.share, 3)}%"))
            data[f"interval_disclosure_{method}"] = inter.to_dict()
        except SdcError as exc:
            notes.append(f"Interval disclosure ({method}) not computed: {exc}")
    section = Section("linkage.html", "Record linkage and interval disclosure", "linkage", {"rows": rows},
                      note=" ".join(notes) or None)
    return section, data


def _utility_section(original: pd.DataFrame, released: pd.DataFrame, cols: list[str],
                     rng: np.random.Generator) -> tuple[Section, dict[str, Any]]:
    moments = moment_differences(original, released, cols)
    summary = utility_summary(original, released, cols, moments=moments, pmse_sample=PMSE_SAMPLE, seed=rng)
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
            (c, _fmt(r.standardized_mean_difference), _fmt(r.var_ratio), *(_fmt(v) for v in quant.loc[c]))
            for c, r in moments.iterrows()
        ],
        "quantile_names": list(quant.columns),
        "rows": [
            ("IL1s (scaled mean absolute deviation)", _fmt(summary["il1"])),
            ("mean |standardized mean difference|", _fmt(summary["mean_abs_standardized_mean_difference"])),
            ("mean |log variance ratio|", _fmt(summary["mean_abs_log_var_ratio"])),
            ("mean |correlation difference|", _fmt(summary["correlation"])),
            (pmse_label, _fmt(summary["pmse"]["pmse"])),
            ("pMSE / its null expectation", _fmt(summary["pmse"]["ratio"])),
        ],
        "corr_figure": None,
    }
    if len(cols) > 1:
        ctx["corr_figure"] = svg(figures.heatmap(correlation_difference(original, released, cols),
                                                 title="released minus original correlation"))
    return Section("utility.html", "Utility: what the release preserves", "utility", ctx), summary


def _classes_section(original: pd.DataFrame, released: pd.DataFrame, schema: Schema | None) -> tuple[Section, dict[str, Any] | None]:
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
                 ("records", _fmt(len(risk.sizes))), ("equivalence classes", _fmt(risk.n_classes)),
                 ("sample uniques (class of size 1)", f"{_fmt(risk.uniques)} ({_fmt(100 * risk.share_unique, 3)}%)"),
                 ("unique combinations released unchanged (as in the original)", _fmt(unchanged)),
                 ("smallest class (k)", _fmt(risk.k)), ("records in classes smaller than 5", _fmt(risk.below(5))),
                 ("discernibility (classes' squared sizes, n per missing record)", _fmt(cost))],
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


def transparency_section(manifest: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> Section:
    """The manifest as the transparency section: every method with every parameter, no seed."""
    if manifest is None:
        return Section("transparency.html", "Transparency: how the release was made", "transparency",
                       {"manifest": None, "settings": dict(settings)},
                       note="No manifest was given: the methods and parameters that produced this release are not known to the report.")
    methods = []
    for m in manifest.get("methods", []):
        methods.append({
            "name": m.get("name"), "cls": m.get("class"),
            "params": [(k, _display(v)) for k, v in (m.get("params") or {}).items()],
            "info": [(k, _display(v)) for k, v in (m.get("info") or {}).items()],
            "warnings": list(m.get("warnings") or []),
            "records": f"{m.get('records_in', '?')} -> {m.get('records_out', '?')}",
        })
    schema_cols = (manifest.get("schema") or {}).get("columns", [])
    ctx = {
        "manifest": manifest,
        "methods": methods,
        "schema": [(c.get("name"), c.get("role") or "-", c.get("kind")) for c in schema_cols],
        "input": manifest.get("input", {}),
        "output": manifest.get("output", {}),
        "dropped": manifest.get("dropped_identifiers", []),
        "settings": dict(settings),
    }
    return Section("transparency.html", "Transparency: how the release was made", "transparency", ctx)


def _display(value: Any) -> str:
    """A manifest value as the transparency section shows it (text, not JSON)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_display(v)}" for k, v in value.items()) or "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_display(v) for v in value) + "]"
    if value is None:
        return "none (default)"
    return str(value)


def schema_from_manifest(manifest: Mapping[str, Any], frame: pd.DataFrame) -> Schema | None:
    """The schema a manifest records, restricted to ``frame``'s columns (None if it has none).

    Roles and kinds come from the manifest; kinds of columns it does not list are inferred.
    """
    entries = (manifest.get("schema") or {}).get("columns")
    if not entries:
        return None
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) and "name" in e for e in entries):
        raise ParameterError("The manifest's 'schema' is malformed: expected a list of columns with a 'name'.")
    known = {e["name"]: e for e in entries if e["name"] in frame.columns}
    roles: dict[str, list[str]] = {}
    for name, entry in known.items():
        if entry.get("role"):
            roles.setdefault(entry["role"], []).append(name)
    kinds = {n: e["kind"] for n, e in known.items() if e.get("kind")}
    orders = {n: e["order"] for n, e in known.items() if e.get("order") is not None and e.get("kind") == "ordinal"}
    return Schema.infer(frame, kinds=kinds, orders=orders, **{
        "identifier": roles.get("identifier", ()), "quasi": roles.get("quasi", ()),
        "confidential": roles.get("confidential", ()), "non_confidential": roles.get("non_confidential", ()),
    })


def on_release_scale(original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str],
                     schema: Schema | None, manifest: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``original`` with each column that the release recoded into categories of its own put on
    the release's scale, so that the permutation paradigm can compare the two.

    A method such as :class:`~sdckit.masking.GlobalRecoding` gives a column a category order
    (its intervals or groups) that the original's values are not in: the release's schema holds
    that order, the original's column does not. Each original value then becomes the released
    value of the same rank (the lower empirical quantile when the record counts differ), its rank
    taken in the original's own order (the manifest's input schema, else its dtype; ties share
    their mean rank). For a monotone recoding ``g`` alone this is ``g(x)`` exactly: the release is
    ``g`` of the original record by record, so its sorted values are ``g`` of the original's.
    Other columns, and columns the original cannot rank, are left as they are (the verification
    then says why it could not use them).
    """
    from scipy.stats import rankdata

    from sdckit.core.ranks import order_values

    if schema is None:
        return original
    own = schema_from_manifest(manifest, original) if manifest else None
    scaled: dict[str, np.ndarray] = {}
    for name in columns:
        column = schema[name] if name in schema else None
        if column is None or column.order is None or name not in original.columns:
            continue
        categories = pd.Index(list(column.order), dtype=object)
        present = released[name].dropna().astype(object)  # a suppressed cell is the release's business
        if original[name].astype(object).isin(categories).all() or not present.isin(categories).all() or present.empty:
            continue
        own_column = own[name] if own is not None and name in own else Schema.infer(original[[name]])[name]
        try:
            x = order_values(original[name], own_column)
            y = order_values(present, column)
        except SdcError:
            continue
        y_sorted = present.to_numpy(dtype=object)[np.argsort(y, kind="stable")]
        rank = rankdata(x, method="average")
        position = np.clip(np.ceil((rank - 0.5) / len(x) * len(y)).astype(np.int64) - 1, 0, len(y) - 1)
        scaled[name] = y_sorted[position]
    if not scaled:
        return original
    out = original.copy()
    for name, values in scaled.items():
        out[name] = pd.Series(values, index=original.index, name=name, dtype=object)
    return out


# ----------------------------------------------------------------------------- build
@renamed_seed()
def build_report(
    original: pd.DataFrame,
    released: pd.DataFrame,
    *,
    schema: Schema | None = None,
    manifest: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    null: str = DEFAULT_SETTINGS["null"],
    n_random: int = DEFAULT_SETTINGS["n_random"],
    n_null: int = DEFAULT_SETTINGS["n_null"],
    alpha: float = DEFAULT_SETTINGS["alpha"],
    interval_p: float = DEFAULT_SETTINGS["interval_p"],
    title: str | None = None,
    seed: RandomState = None,
    progress: Progress | None = None,
    weight: str | None = None,
    household: str | None = None,
) -> Report:
    """Compute the risk and utility of a release and describe the report's sections.

    Parameters
    ----------
    original, released : DataFrame
        The original data and the release (row i of the release is the masked row i of the
        original when they have the same number of records).
    schema : Schema, optional
        The release's schema (roles choose the assessed columns; categorical
        quasi-identifiers give the equivalence classes).
    manifest : mapping, optional
        The release's manifest, shown as the transparency section.
    columns : sequence of str, optional
        Columns for the permutation and linkage measures (default: the quasi-identifiers and
        confidential columns of an ordered kind, or every shared numeric column).
    null, n_random, n_null, alpha
        The verification's settings (:func:`sdckit.risk.permutation_risk`).
    interval_p : float
        Width of the interval-disclosure intervals, in percent.
    seed : int or Generator
        Seeds the verification's random records (not shown anywhere in the report).
    progress : callable, optional
        ``progress(done, total, label)`` after each step.
    weight, household : str, optional
        Sampling-weight and household-id columns of the release for the re-identification risk
        section (:mod:`sdckit.report.risk_section`).
    """
    check_settings({"null": null, "n_random": n_random, "n_null": n_null, "alpha": alpha, "interval_p": interval_p})
    rng = as_generator(seed, secret=False)
    cols = list(columns) if columns is not None else assessed_columns(original, released, schema)
    shared_numeric = set(shared_numeric_columns(original, released))
    numeric = [c for c in cols if c in shared_numeric]
    settings = {"null": null, "n_random": n_random, "n_null": n_null, "alpha": alpha, "interval_p": interval_p,
                "columns": ", ".join(cols)}
    total, done = 5, 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, label)

    if release_claims_dp(manifest):  # no aggregate of the original data (issue 19 item 2)
        return Report(
            title=title or "sdckit disclosure-risk and utility report",
            subtitle=f"{len(released):,} released records; differentially private release",
            sections=(Section("summary.html", "Summary", "summary", {
                "rows": [("differential privacy", "claimed by every method; no measure of the original data shown")],
                "deniable": None, "records": f"{len(released):,} released"}, note=DP_RELEASE_NOTE),
                transparency_section(manifest, settings)),
            data={"claims_dp": True, "settings": settings},
            verdict=Verdict(DP_CLAIMED, "differentially private (claimed by every method); the report "
                                        "measures nothing of the original data"),
        )
    sections: list[Section] = []
    data: dict[str, Any] = {"columns": cols, "settings": settings, "claims_dp": False}
    headline: list[tuple[str, str]] = []
    # --- risk: the permutation paradigm
    try:
        if not cols:
            raise SdcError("no numeric, ordinal or date column is shared by the original and the release")
        large = len(original) > LINKAGE_SAMPLE
        perm_original, perm_released, pairs, _ = sample_pairs(original, released, PERMUTATION_RECORDS,
                                                              seed=rng)
        risk = permutation_risk(on_release_scale(perm_original, perm_released, cols, schema, manifest),
                                perm_released, cols,
                                schema=schema, null=null, n_random=n_random,
                                n_null=n_null, alpha=alpha, sample=LINKAGE_SAMPLE if large else None,
                                max_replicates=LARGE_DATA_REPLICATES if large else MAX_REPLICATES, seed=rng)
        records = None if pairs is None else f"{pairs:,} of {len(original):,} record pairs"
        sections += _permutation_sections(risk, records)
        data["permutation_records"] = pairs
        data["permutation"] = risk.to_dict()
        state = verification_state(risk)
        verdict = Verdict(state, f"{state} (p = {_fmt(risk.p_value)} "
                                 f"{'>' if risk.p_value > risk.alpha else '<='} alpha = {risk.alpha:g})")
        headline += [
            ("verification", verdict.text),
            ("Hellinger distance (null baseline)", f"{_fmt(risk.hellinger)} ({_fmt(risk.hellinger_null)})"),
            ("p-value (99% interval)", f"{_fmt(risk.p_value)} ({_fmt(risk.p_value_low)} - {_fmt(risk.p_value_high)})"),
            ("records whose match is not plausibly random", f"{_fmt(100 * risk.share_not_random, 3)}%"),
        ] + ([("permutation paradigm computed on", f"{records} (a simple random sample)")] if records else [])
    except SdcError as exc:
        sections.append(Section("distances.html", "Permutation distances: original vs random records", "distances", {},
                                note=f"The permutation-paradigm verification was not computed: {exc}"))
        verdict = Verdict(NOT_ASSESSED, f"{NOT_ASSESSED}: the permutation-paradigm verification was not computed ({exc})")
    step("permutation paradigm")
    # --- risk: linkage and interval disclosure
    section, linkage_data = _linkage_section(original, released, numeric, interval_p, rng) if numeric else (
        Section("linkage.html", "Record linkage and interval disclosure", "linkage", {"rows": []},
                note="No numeric column is shared by the original and the release."), {})
    sections.append(section)
    data.update(linkage_data)
    if "distance_linkage" in linkage_data:
        headline.append(("distance-based record linkage", f"{_fmt(100 * linkage_data['distance_linkage']['rate'], 3)}%"))
    step("record linkage")
    # --- utility
    try:
        if not numeric:
            raise SdcError("no numeric column is shared by the original and the release")
        section, summary = _utility_section(original, released, numeric, rng)
        data["utility"] = summary
        if summary["il1"] is not None:
            headline.append(("information loss IL1s", _fmt(summary["il1"])))
        headline.append(("propensity pMSE / null", _fmt(summary["pmse"]["ratio"])))
    except SdcError as exc:
        section = Section("utility.html", "Utility: what the release preserves", "utility", {}, note=f"Utility not computed: {exc}")
    sections.append(section)
    step("utility")
    # --- equivalence classes
    section, classes = _classes_section(original, released, schema)
    sections.append(section)
    data["classes"] = classes
    if classes and classes["unchanged_uniques"] and verdict.state != NOT_DENIABLE:
        # Unique quasi-identifier combinations released as they were: not deniable, whatever
        # the verification of the perturbed columns says (a borderline one included).
        verdict = Verdict(NOT_DENIABLE, f"{NOT_DENIABLE}: {classes['unchanged_uniques']:,} unique "
                                        "quasi-identifier combination(s) released unchanged")
        row = ("verification", verdict.text)
        headline = [row if key == "verification" else (key, value) for key, value in headline]
        if row not in headline:
            headline.insert(0, row)
    step("equivalence classes")
    # --- re-identification risk on the categorical keys (issue 16)
    from sdckit.report.risk_section import risk_section  # it builds on this module's Section

    section, data["risk"] = risk_section(released, schema, weight, household)
    sections.append(section)
    step("re-identification risk")
    sections = [replace(section, from_original=True) for section in sections]
    headline.append(("differential privacy", "not claimed: every measure here comes from the original data"))
    sections.append(transparency_section(manifest, settings))
    data["verdict"] = verdict.to_dict()
    # the summary's badge: deniable, borderline (shown, not deniable) or not as the verification
    # says; none when not assessed
    deniable = {DENIABLE: True, NOT_DENIABLE: False, BORDERLINE: False}.get(verdict.state)
    borderline = verdict.state == BORDERLINE
    summary_section = Section("summary.html", "Summary", "summary", {
        "rows": headline, "deniable": deniable, "borderline": borderline,
        "records": f"{len(original):,} original, {len(released):,} released",
    })
    return Report(
        title=title or "sdckit disclosure-risk and utility report",
        subtitle=f"{len(original):,} original and {len(released):,} released records; {len(cols)} assessed column(s)",
        sections=(summary_section, *sections),
        data=data,
        verdict=verdict,
    )
