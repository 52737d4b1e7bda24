"""The report's section on re-identification risk as statistical offices measure it (issue 16):
individual and global risk with sampling weights, household risk, k-anonymity violations, the
key variables that drive uniqueness, and SUDA2 — counts and shares only, never a record or a
key value."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sdckit.core.errors import SdcError
from sdckit.core.schema import CATEGORICAL_KINDS, Role, Schema
from sdckit.report import figures
from sdckit.report.section import Section, fmt, svg
from sdckit.risk import categorical_quasi
from sdckit.risk.summary import risk_summary

TITLE = "Re-identification risk on the categorical key variables"
#: Largest MSU size the report's SUDA2 looks for (the search grows as 2^keys).
SUDA_MAX_SIZE = 5


def risk_section(released: pd.DataFrame, schema: Schema | None, weight: str | None = None,
                 household: str | None = None) -> tuple[Section, dict[str, Any] | None]:
    """The risk section and its JSON figures (None when there is nothing to measure)."""
    keys = [k for k in (categorical_quasi(schema) if schema is not None else ()) if k in released.columns]
    if not keys:
        return Section("risk.html", TITLE, "risk", {},
                       note="The schema declares no nominal or ordinal quasi-identifier in the release: no key to measure."), None
    sensitive = [c.name for c in schema.columns if c.role is Role.CONFIDENTIAL and c.kind in CATEGORICAL_KINDS
                 and c.name in released.columns]
    try:
        s = risk_summary(released, keys, weight, household, suda_max_size=min(len(keys), SUDA_MAX_SIZE),
                         sensitive=sensitive)
    except SdcError as exc:
        return Section("risk.html", TITLE, "risk", {}, note=f"Risk not computed: {exc}"), None
    d = s.to_dict()
    rows = [
        ("key variables", ", ".join(keys)),
        ("sampling weight", weight or "none (every record weighs 1: risk = 1 / class size)"),
        ("global risk (mean individual risk)", fmt(d["global_risk"], 4)),
        ("expected re-identifications", fmt(d["expected_reidentifications"], 2)),
        (f"records with individual risk above {d['threshold']:g}", fmt(d["above_threshold"])),
        ("sample uniques", fmt(d["sample_uniques"])),
        *((f"records violating {k}-anonymity", fmt(v)) for k, v in d["k_anonymity_violations"].items()),
    ]
    if household:
        rows += [("household risk (mean)", fmt(d["household_risk"], 4)),
                 ("expected re-identifications (households)", fmt(d["household_expected_reidentifications"], 2))]
    suda = d["suda2"]
    if suda:
        rows += [(f"records with a minimal sample unique (SUDA2, sizes up to {suda['max_size']})", fmt(suda["records_with_msu"])),
                 ("largest SUDA score", fmt(suda["max_score"]))]
    pop = d["population"]
    if pop:
        uniq = pop["population_uniqueness"]
        rows += [("population (sum of the weights)", fmt(pop["population"])),
                 (f"population uniques, share ({uniq['dankar_model']} model, Dankar's rule)", fmt(uniq["dankar"], 6)),
                 ("prosecutor risk: average / highest", f"{fmt(pop['prosecutor']['average'], 6)} / {fmt(pop['prosecutor']['highest'], 6)}"),
                 ("journalist risk: average / highest", f"{fmt(pop['journalist']['average'], 6)} / {fmt(pop['journalist']['highest'], 6)}"),
                 ("marketer risk", fmt(pop["marketer"], 6))]
    for column, div in (d["l_diversity"] or {}).items():
        rows += [(f"records whose class shares one value of {column} (attribute disclosure)", fmt(div["records_with_one_value"])),
                 (f"smallest distinct / entropy l-diversity of {column}", f"{fmt(div['min_distinct_l'])} / {fmt(div['min_entropy_l'], 3)}")]
    ctx = {
        "figure": svg(figures.column_bars(pd.DataFrame({"records": d["risk_bands"]}), ylabel="records")),
        "rows": rows,
        "drivers": [(k, fmt(v)) for k, v in d["sample_uniques_without_key"].items()],
        "uniques": fmt(d["sample_uniques"]),
        "dis_bands": [(k, fmt(v)) for k, v in (suda["dis_score_bands"].items() if suda else [])],
    }
    return Section("risk.html", TITLE, "risk", ctx), d
