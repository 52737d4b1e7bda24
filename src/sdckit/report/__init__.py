"""Reporting: the self-contained HTML report (the manifest it renders is built by
:mod:`sdckit.core.provenance`).

:func:`build_report` computes the risk and utility measures of a release and describes the
report's sections (compute -> model); :func:`render_report` / :func:`write_report` render it
through Jinja2 templates with autoescape (one template per section in ``templates/``);
:func:`assess_report` does both for an original and a released data set.

The names are loaded on first use, so that ``import sdckit`` does not pull in Jinja2,
matplotlib and the measures.
"""

from __future__ import annotations

from sdckit.core.lazy import lazy_exports

_LAZY = {
    "render_report": "sdckit.report.render",
    "write_report": "sdckit.report.render",
    "Report": "sdckit.report.model",
    "Section": "sdckit.report.model",
    "build_report": "sdckit.report.model",
    "assess_report": "sdckit.report.assess",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
