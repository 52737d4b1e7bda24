"""The report's sections on the permutation paradigm (seeds 000 and 001): the permutation distances
of the original against random records with the verification's verdict, the per-record
plausibility of the intruder's matches, and the rank displacement."""

from __future__ import annotations

from dataclasses import replace

from sdckit.report import figures
from sdckit.report.section import Section, fmt, svg
from sdckit.report.verdict import verification_state
from sdckit.risk.permutation import PermutationRisk

#: What the permutation sections say when computed on a sample of record pairs (issue 28).
SUB_RELEASE_NOTE = (
    "every figure here is that of the release of the sampled records alone, computed exactly on "
    "them; ranks and distances are on its scale. The p-value's Monte-Carlo error (standard error, "
    "99% interval) is that of the sub-release's test; as an estimate of the whole release's "
    "p-value it carries a further sampling error that is not stated. Distance linkage is easier "
    "among fewer records, so the sub-release tends to look riskier than the whole."
)


def permutation_sections(risk: PermutationRisk, records: str | None = None) -> list[Section]:
    """The distances, plausibility and displacement sections; ``records`` is the sentence on the
    sample of record pairs they were computed on, if any (:data:`sdckit.report.model.PERMUTATION_RECORDS`)."""
    p, q = risk.original_distribution, risk.random_distribution
    verdict = verification_state(risk)
    pairs = [("record pairs assessed (a simple random sample: the sub-release)", records)] if records else []
    dist = Section("distances.html", "Permutation distances: original vs random records", "distances", {
        "figure": svg(figures.distance_distributions(p, q)),
        "rows": [
            ("Hellinger distance H(P, Q)", fmt(risk.hellinger)),
            ("null baseline of H (no link at all)", fmt(risk.hellinger_null)),
            ("excess over the baseline", fmt(risk.excess_hellinger)),
            (f"p-value ({risk.null} null)", fmt(risk.p_value)),
            ("Monte-Carlo standard error of the p-value", fmt(risk.p_value_se)),
            ("99% interval of the p-value (Clopper-Pearson)", f"{fmt(risk.p_value_low)} - {fmt(risk.p_value_high)}"),
            ("Monte-Carlo replicates (sequential test)", fmt(risk.replicates)),
            (f"verdict at level {fmt(risk.alpha)}", verdict),
            ("data-set-level permutation distance" + (" (minimum over the sample: an upper bound)"
                                                      if risk.sampled is not None else ""), fmt(risk.dataset_distance)),
        ] + pairs + ([("original records linked and verified (a simple random sample)",
               f"{risk.sampled:,} of {len(risk.displacement) if risk.displacement is not None else risk.sampled:,}")]
             if risk.sampled is not None else []),
        "null": risk.null, "deniable": risk.plausibly_deniable,
    }, note=records and f"Computed on {records}: {SUB_RELEASE_NOTE}")
    plaus = Section("plausibility.html", "Per-record plausibility of the intruder's matches", "plausibility", {
        "figure": svg(figures.plausibility(risk.p_random, risk.alpha)),
        "share": fmt(100 * risk.share_not_random, 3), "alpha": fmt(risk.alpha),
        "count": int((risk.p_random < risk.alpha).sum()), "records": len(risk.p_random),
    })
    if records:
        plaus = replace(plaus, note=f"Computed on {records} (the sub-release).")
    sections = [dist, plaus]
    if risk.displacement is not None:
        d = risk.displacement
        sections.append(Section("displacement.html", "Rank displacement (record-level identity disclosure)", "displacement", {
            "figure": svg(figures.integer_histogram(d, xlabel="rank displacement max_j |rank(x_ij) - rank(y_ij)|")),
            "rows": [("median displacement", fmt(float(d.median()))), ("records displaced by at most 1 rank", fmt(int((d <= 1).sum()))),
                     ("records not displaced at all", fmt(int((d == 0).sum())))],
            "linkage": [(k.replace("_", " ") + (" (in the sample)" if risk.sampled is not None else ""), fmt(v))
                        for k, v in (risk.linkage or {}).items()],
        }, note=records and f"Computed on {records} (the sub-release): ranks on its scale."))
    return sections
