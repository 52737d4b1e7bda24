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
from dataclasses import replace
from typing import Any

import pandas as pd

from sdckit.core.errors import SdcError
from sdckit.core.random import RandomState, as_generator, renamed_seed
from sdckit.core.schema import Schema
from sdckit.permutation.sample import sample_pairs
from sdckit.permutation.verify import MAX_REPLICATES
from sdckit.report.columns import assessed_columns, on_release_scale
from sdckit.report.measures import classes_section, linkage_section, unchanged_uniques, utility_section
from sdckit.report.permutation_section import SUB_RELEASE_NOTE, permutation_sections
from sdckit.report.risk_section import risk_section
from sdckit.report.section import NOT_DP_LABEL, Report, Section, fmt, svg
from sdckit.report.settings import DEFAULTS, check_settings
from sdckit.report.transparency import schema_from_manifest, transparency_section
from sdckit.report.verdict import (
    BORDERLINE,
    DENIABLE,
    DP_CLAIMED,
    NOT_ASSESSED,
    NOT_DENIABLE,
    Verdict,
    verification_state,
)
from sdckit.risk import permutation_risk
from sdckit.utility.columns import shared_numeric_columns

#: The names other modules import from here (the model's parts live in the modules above).
__all__ = ["DEFAULT_SETTINGS", "DP_RELEASE_NOTE", "NOT_DP_LABEL", "SUB_RELEASE_NOTE", "Report", "Section",
           "assessed_columns", "build_report", "on_release_scale", "release_claims_dp", "schema_from_manifest",
           "svg", "transparency_section", "unchanged_uniques"]

Progress = Callable[[int, int, str], Any]

DEFAULT_SETTINGS = DEFAULTS

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
        sections += permutation_sections(risk, records)
        data["permutation_records"] = pairs
        data["permutation"] = risk.to_dict()
        state = verification_state(risk)
        verdict = Verdict(state, f"{state} (p = {fmt(risk.p_value)} "
                                 f"{'>' if risk.p_value > risk.alpha else '<='} alpha = {risk.alpha:g})")
        headline += [
            ("verification", verdict.text),
            ("Hellinger distance (null baseline)", f"{fmt(risk.hellinger)} ({fmt(risk.hellinger_null)})"),
            ("p-value (99% interval)", f"{fmt(risk.p_value)} ({fmt(risk.p_value_low)} - {fmt(risk.p_value_high)})"),
            ("records whose match is not plausibly random", f"{fmt(100 * risk.share_not_random, 3)}%"),
        ] + ([("permutation paradigm computed on", f"{records} (a simple random sample)")] if records else [])
    except SdcError as exc:
        sections.append(Section("distances.html", "Permutation distances: original vs random records", "distances", {},
                                note=f"The permutation-paradigm verification was not computed: {exc}"))
        verdict = Verdict(NOT_ASSESSED, f"{NOT_ASSESSED}: the permutation-paradigm verification was not computed ({exc})")
    step("permutation paradigm")
    # --- risk: linkage and interval disclosure
    section, linkage_data = linkage_section(original, released, numeric, interval_p, rng, DBRL_SAMPLE) if numeric else (
        Section("linkage.html", "Record linkage and interval disclosure", "linkage", {"rows": []},
                note="No numeric column is shared by the original and the release."), {})
    sections.append(section)
    data.update(linkage_data)
    if "distance_linkage" in linkage_data:
        headline.append(("distance-based record linkage", f"{fmt(100 * linkage_data['distance_linkage']['rate'], 3)}%"))
    step("record linkage")
    # --- utility
    try:
        if not numeric:
            raise SdcError("no numeric column is shared by the original and the release")
        section, summary = utility_section(original, released, numeric, rng, PMSE_SAMPLE)
        data["utility"] = summary
        if summary["il1"] is not None:
            headline.append(("information loss IL1s", fmt(summary["il1"])))
        headline.append(("propensity pMSE / null", fmt(summary["pmse"]["ratio"])))
    except SdcError as exc:
        section = Section("utility.html", "Utility: what the release preserves", "utility", {}, note=f"Utility not computed: {exc}")
    sections.append(section)
    step("utility")
    # --- equivalence classes
    section, classes = classes_section(original, released, schema)
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
