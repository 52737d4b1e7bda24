"""The report's figures: matplotlib drawn to SVG text, to be inlined in the HTML.

Each function takes aggregates (distributions, per-column summaries, counts) — never records —
and returns the ``<svg>`` element as a string. Text stays text (``svg.fonttype = "none"``,
escaped by matplotlib) and ids are salted with a fixed string, so the same input gives the
same bytes. The original records are drawn blue (``ORIGINAL``) and random or released ones
orange (``RANDOM``) throughout, as in seed 000's Figures 1-3.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

ORIGINAL = "#1f77b4"
RANDOM = "#ff7f0e"
NEUTRAL = "#4c72b0"
ALERT = "#c44e52"
#: Colours of side-by-side series (distinct for up to seven, e.g. the five quantiles).
SERIES = (ORIGINAL, RANDOM, "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")

#: "tight" is about 1.5x faster than "constrained" and keeps rotated labels inside the figure.
_LAYOUT = "tight"

_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "sdckit",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _styled(draw: Callable[..., str]) -> Callable[..., str]:
    """Draw under sdckit's matplotlib style, without touching the caller's global settings."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        import matplotlib

        with matplotlib.rc_context(_RC):
            return draw(*args, **kwargs)

    return wrapper


def _figure(width: float = 6.4, height: float = 3.2):
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global figure list

    fig = Figure(figsize=(width, height), layout=_LAYOUT)
    return fig, fig.subplots()


def to_svg(fig) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no metadata)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)


def _bins(max_value: int, most: int = 40) -> np.ndarray:
    if max_value <= most:
        return np.arange(-0.5, max_value + 1.5, 1.0)
    return np.linspace(-0.5, max_value + 0.5, most + 1)


@_styled
def distance_distributions(
    original: pd.Series, random: pd.Series, *, title: str = "", labels: Sequence[str] = ("original records", "random records")
) -> str:
    """Seed 000 Figures 1-3: the permutation-distance distributions P and Q side by side."""
    fig, ax = _figure()
    top = int(max(original.index.max(), random.index.max()))
    ax.hist(
        [original.index.to_numpy(float), random.index.to_numpy(float)],
        bins=_bins(top),
        weights=[original.to_numpy(float), random.to_numpy(float)],
        color=[ORIGINAL, RANDOM],
        label=list(labels),
    )
    ax.set_xlabel("permutation distance of the match")
    ax.set_ylabel("relative frequency")
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return to_svg(fig)


@_styled
def plausibility(p_random: pd.Series, alpha: float) -> str:
    """Histogram of each record's ``p_random`` (the chance a random record matches as closely)."""
    fig, ax = _figure()
    values = np.clip(p_random.to_numpy(float), 0, 1)
    bins = np.linspace(0, 1, 41)
    low = values < alpha
    ax.hist([values[low], values[~low]], bins=bins, stacked=True, color=[ALERT, ORIGINAL],
            label=[f"not plausibly random (< {alpha:g})", "plausibly random"])
    ax.axvline(alpha, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel("share of random records matching at least as closely (p_random)")
    ax.set_ylabel("original records")
    ax.legend(frameon=False)
    return to_svg(fig)


@_styled
def integer_histogram(values: pd.Series | np.ndarray, *, xlabel: str, ylabel: str = "records") -> str:
    """Histogram of non-negative integers (e.g. the rank displacement of each record)."""
    fig, ax = _figure()
    v = np.asarray(values, dtype=float)
    ax.hist(v, bins=_bins(int(v.max()) if v.size else 0), color=ORIGINAL)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return to_svg(fig)


@_styled
def column_bars(table: pd.DataFrame, *, ylabel: str, reference: float = 0.0) -> str:
    """Grouped bars: one group per column of the data (rows of ``table``), one bar per measure."""
    fig, ax = _figure(6.4, 3.4)
    n, k = table.shape
    width = 0.8 / max(k, 1)
    x = np.arange(n)
    for j, name in enumerate(table.columns):
        ax.bar(x + (j - (k - 1) / 2) * width, table[name].to_numpy(float), width, label=str(name),
               color=SERIES[j % len(SERIES)])
    ax.axhline(reference, color="black", linewidth=0.6)
    ax.set_xticks(x, [str(i) for i in table.index], rotation=45 if n > 6 else 0, ha="right" if n > 6 else "center")
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    return to_svg(fig)


@_styled
def heatmap(matrix: pd.DataFrame, *, title: str, limit: float | None = None) -> str:
    """A diverging heat map (e.g. the correlation-matrix difference)."""
    fig, ax = _figure(5.2, 4.4)
    values = matrix.to_numpy(float)
    vmax = limit if limit is not None else max(float(np.nanmax(np.abs(values))) if values.size else 0.0, 1e-9)
    image = ax.imshow(values, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    names = [str(c) for c in matrix.columns]
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_yticks(range(len(names)), names)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return to_svg(fig)


@_styled
def class_sizes(size_counts: pd.Series) -> str:
    """Number of equivalence classes of each size (sizes below 5 highlighted)."""
    fig, ax = _figure()
    sizes = size_counts.index.to_numpy(int)
    counts = size_counts.to_numpy(float)
    colors = [ALERT if s < 5 else ORIGINAL for s in sizes]
    if len(sizes) > 60:  # group the long tail into bins
        bins = np.unique(np.r_[np.arange(1, 11), np.geomspace(11, sizes.max() + 1, 30).astype(int)])
        binned, edges = np.histogram(sizes, bins=bins, weights=counts)
        ax.bar(edges[:-1], binned, width=np.diff(edges), align="edge", color=ORIGINAL)
        ax.set_xscale("log")
    else:
        ax.bar(sizes, counts, color=colors)
    ax.set_xlabel("equivalence-class size")
    ax.set_ylabel("classes")
    return to_svg(fig)


@_styled
def risk_utility(table: pd.DataFrame, *, x: str, y: str, xlabel: str, ylabel: str, flagged: str | None = None) -> str:
    """Scatter of one point per candidate (row label as annotation): risk against utility loss."""
    fig, ax = _figure(6.4, 4.0)
    colors = [ALERT if flagged and bool(table.loc[i, flagged]) else ORIGINAL for i in table.index]
    ax.scatter(table[x].to_numpy(float), table[y].to_numpy(float), c=colors, s=40, zorder=3)
    for label, row in table.iterrows():
        ax.annotate(str(label), (float(row[x]), float(row[y])), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return to_svg(fig)


@_styled
def curve(points: pd.DataFrame, *, x: str, ys: Sequence[str], xlabel: str, log_x: bool = False,
          hline: float | None = None, vline: float | None = None) -> str:
    """Line plot of one or more measures against a parameter (the tuning curve)."""
    fig, ax = _figure()
    colors = [ORIGINAL, RANDOM, "#2ca02c"]
    for j, name in enumerate(ys):
        ax.plot(points[x].to_numpy(float), points[name].to_numpy(float), marker="o", label=name, color=colors[j % 3])
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.6, linestyle="--")
    if vline is not None:
        ax.axvline(vline, color=ALERT, linewidth=0.8)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.legend(frameon=False)
    return to_svg(fig)
