"""Rendering: the report model through Jinja2 templates (autoescape on) to one HTML file.

One template per section in ``templates/`` and ``base.html`` around them: the shared
``layout.html`` (which the table report uses too) with the report's footer, through the one
environment of :mod:`sdckit.core.templates`. The HTML is self-contained: styles inline, figures
inline SVG, no script, no external resource — it opens offline and in any browser.
"""

from __future__ import annotations

from pathlib import Path

from sdckit import __version__
from sdckit.core.templates import environment, render
from sdckit.io import write_text_atomic
from sdckit.report.section import NOT_DP_LABEL, Report

__all__ = ["environment", "render_report", "write_report"]


def render_report(report: Report) -> str:
    """The report as HTML text."""
    return render("base.html", report=report, version=__version__, not_dp_label=NOT_DP_LABEL)


def write_report(report: Report, path: str | Path, inputs: tuple[Path, ...] = ()) -> Path:
    """Render ``report`` and write it atomically to ``path`` (never over one of ``inputs``)."""
    path = Path(path)
    write_text_atomic(path, render_report(report), inputs)
    return path
