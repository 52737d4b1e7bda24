"""Transparency and reporting: the release manifest and the self-contained HTML report.

:func:`build_report` computes the risk and utility measures of a release and describes the
report's sections (compute -> model); :func:`render_report` / :func:`write_report` render it
through Jinja2 templates with autoescape (one template per section in ``templates/``);
:func:`assess_report` does both for an original and a released data set.
"""

from sdckit.report.assess import assess_report
from sdckit.report.model import Report, Section, build_report
from sdckit.report.render import REPORT_NAME, render_report, write_report

__all__ = ["REPORT_NAME", "Report", "Section", "assess_report", "build_report", "render_report", "write_report"]
