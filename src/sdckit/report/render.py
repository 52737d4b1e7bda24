"""Rendering: the report model through Jinja2 templates (autoescape on) to one HTML file.

One template per section in ``templates/`` and ``base.html`` around them. The HTML is
self-contained: styles inline, figures inline SVG, no script, no external resource — it opens
offline and in any browser.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from sdckit import __version__
from sdckit.io import write_text_atomic
from sdckit.report.section import NOT_DP_LABEL, Report


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment: package templates, autoescape always on, undefined is an error."""
    return Environment(
        loader=PackageLoader("sdckit.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_report(report: Report) -> str:
    """The report as HTML text."""
    return environment().get_template("base.html").render(report=report, version=__version__,
                                                                 not_dp_label=NOT_DP_LABEL)


def write_report(report: Report, path: str | Path, inputs: tuple[Path, ...] = ()) -> Path:
    """Render ``report`` and write it atomically to ``path`` (never over one of ``inputs``)."""
    path = Path(path)
    write_text_atomic(path, render_report(report), inputs)
    return path
