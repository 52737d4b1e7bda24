"""Open the report in headless Chromium: the figures must render (non-blank) with no console
error. Chromium is Debian's ``chromium`` package, which ``.ci/run`` installs when it can; where
no Chromium exists the test is skipped with the reason.

This is also the acceptance check of ``sdckit demo``: it must end with the HTML report, and
opening that report must show the figures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sdckit.report.figures import ALERT, ORIGINAL, RANDOM

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    for name in (os.environ.get("SDCKIT_CHROMIUM"), *CANDIDATES):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.skip("headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it "
                "when apt-get is available); the browser check of the HTML report cannot run")


def open_in_browser(page: Path, shot: Path, height: int = 9000) -> tuple[np.ndarray, list[str]]:
    """Screenshot ``page``; return the RGB pixels and the console messages Chromium logged."""
    run = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", f"--user-data-dir={shot.parent / 'profile'}",
         "--enable-logging=stderr", "--v=0", f"--window-size=1200,{height}",
         f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.exists(), f"Chromium wrote no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    import matplotlib.image

    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).round().astype(np.int16)
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return pixels, console


def colour_pixels(pixels: np.ndarray, hex_colour: str, tolerance: int = 12) -> int:
    target = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels - target).max(axis=2) <= tolerance).sum())


def blue_bands(pixels: np.ndarray, min_pixels: int = 20, gap: int = 40) -> list[tuple[int, int]]:
    """Runs of screenshot rows holding at least ``min_pixels`` of the figures' blue."""
    target = np.array([int(ORIGINAL[i:i + 2], 16) for i in (1, 3, 5)])
    rows = np.flatnonzero((np.abs(pixels - target).max(axis=2) <= 12).sum(axis=1) >= min_pixels)
    bands: list[tuple[int, int]] = []
    for r in rows:
        if bands and r - bands[-1][1] <= gap:
            bands[-1] = (bands[-1][0], int(r))
        else:
            bands.append((int(r), int(r)))
    return [b for b in bands if b[1] - b[0] >= 20]


def test_console_errors_are_detected(tmp_path):
    # the detector itself must be able to fail: a page that throws is caught
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>throw new Error('boom');</script></body></html>")
    _, console = open_in_browser(page, tmp_path / "bad.png", height=300)
    assert any("boom" in line for line in console)


def test_demo_report_renders_its_figures_in_chromium(tmp_path):
    from typer.testing import CliRunner

    from sdckit.cli import app

    # in-process, as tests/test_cli.py runs the demo too; the browser is the subject here
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "demo")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = tmp_path / "demo" / "casc_protected.report.html"
    last = [line for line in result.stdout.splitlines() if line.strip()][-1]
    assert "report:" in last and str(report) in last  # the demo ends with the report
    html = report.read_text(encoding="utf-8")
    n_figures = html.count("<svg")
    assert n_figures >= 6
    pixels, console = open_in_browser(report, tmp_path / "report.png")
    assert console == [], console
    # the page is not blank: many distinct colours and much non-white area
    flat = pixels.reshape(-1, 3)
    assert len(np.unique(flat[:: 7], axis=0)) > 200
    # the figures drew their bars: the original records' blue and the random records' orange
    # fill large areas (a figure that failed to render leaves neither)
    assert colour_pixels(pixels, ORIGINAL) > 20_000
    assert colour_pixels(pixels, RANDOM) > 5_000
    # each figure drawn with blue bars shows up as its own vertical band of blue rows:
    # distances, plausibility, displacement, moments and quantiles — five figures
    assert len(blue_bands(pixels)) >= 5, blue_bands(pixels)
    assert colour_pixels(pixels, ALERT) > 50  # the plausibility histogram's flagged records
