"""What the report's model is made of: a :class:`Report` of :class:`Section` values, each a template
and the aggregates it shows, and the one formatter of figures (:func:`fmt`). Every section
builder (:mod:`sdckit.report.model`, :mod:`sdckit.report.risk_section`, compare, tune) uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from markupsafe import Markup

from sdckit.report.verdict import Verdict


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


#: What a section computed from the original data says of itself (issue 19 item 2).
NOT_DP_LABEL = "Computed from the original data: not differentially private."


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


def fmt(value: Any, digits: int = 3) -> str:
    """A figure as the report's tables show it: ``n/a`` for none, yes / no, counts with thousands
    separators, other numbers to ``digits`` decimals (significant digits below 0.001)."""
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
