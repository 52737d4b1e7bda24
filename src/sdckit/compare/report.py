"""The comparison's outputs: the risk-utility table (CSV), its plot and a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdckit.compare.core import Comparison
from sdckit.io import write_text_atomic
from sdckit.report import figures
from sdckit.report.model import Report, Section, svg
from sdckit.report.render import render_report

UTILITY_LABELS = {"il1": "utility loss (IL1s)", "correlation": "utility loss (mean |correlation difference|)",
                  "pmse": "utility loss (pMSE)"}


def risk_utility_figure(comparison: Comparison) -> str:
    """Hellinger distance against utility loss, one point per candidate (flagged ones red)."""
    table = comparison.table()
    table["flagged"] = ~table["plausibly_deniable"]
    return figures.risk_utility(table, x="utility_loss", y="hellinger", flagged="flagged",
                                xlabel=UTILITY_LABELS.get(comparison.settings.get("utility"), "utility loss"),
                                ylabel="Hellinger distance H(P, Q)")


def comparison_report(comparison: Comparison, title: str = "sdckit comparison: risk against utility") -> Report:
    """The comparison as a report model (rendered with the report's templates)."""
    table = comparison.table()
    rows = [
        (label, f"{r.hellinger:.3f}", f"{r.hellinger_null:.3f}", f"{r.p_value:.3f}", f"{r.utility_loss:.4f}",
         "yes" if r.plausibly_deniable else "no")
        for label, r in table.iterrows()
    ]
    methods = [(r.label, "; ".join(
        f"{m['name']}(" + ", ".join(f"{k}={v}" for k, v in m["params"].items()) + ")" for m in r.methods))
        for r in comparison.results]
    settings: dict[str, Any] = {**comparison.settings, "records": comparison.records, "seeds": comparison.seeds}
    section = Section("compare.html", "Risk against utility", "compare", {
        "figure": svg(risk_utility_figure(comparison)), "rows": rows, "methods": methods,
        "settings": [(k, "all shared" if v is None else v) for k, v in settings.items()],
    })
    return Report(title, f"{len(table)} candidates on {comparison.records:,} records, {comparison.seeds} seed(s)",
                  (section,), comparison.to_dict())


def write_comparison(comparison: Comparison, out_dir: str | Path, inputs: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Write ``compare.csv``, ``compare.svg``, ``compare.html`` and ``compare.json`` into ``out_dir``."""
    import json

    out = Path(out_dir)
    paths = {name: out / f"compare.{name}" for name in ("csv", "svg", "html", "json")}
    write_text_atomic(paths["csv"], comparison.table().to_csv(), inputs)
    write_text_atomic(paths["svg"], risk_utility_figure(comparison), inputs)
    write_text_atomic(paths["html"], render_report(comparison_report(comparison)), inputs)
    write_text_atomic(paths["json"], json.dumps(comparison.to_dict(), indent=2) + "\n", inputs)
    return paths
