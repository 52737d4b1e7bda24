"""Benchmark of the workbench's screens on large files (issue 31). Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_app.py [--repeats 3] [--rows 100000 1000000] [--suda]

In-process calls of the functions the screens make (:mod:`sdckit.app.session`), not the browser:

* open: :func:`~sdckit.app.session.open_path` of a CSV file (``sdckit.io.read``);
* overview: the Data and Roles screens' figures on a fresh data set — the column overview,
  the role suggestions (both on :data:`~sdckit.app.session.SAMPLE_RECORDS` sampled records
  beyond that size, as the pages say) and the preview;
* risk: the Risk screen — the roles checked, :func:`~sdckit.app.session.risk_figures` (the
  risk summary with a weight and households) and :func:`~sdckit.app.session.risk_plots` (the
  report's two figures);
* suda (``--suda``): the SUDA2 job of the Risk screen, :func:`~sdckit.app.session.suda_figures`.

Data: synthetic survey records (a unique id, a unique text code, sex, age 0-99, 200 regions, 7
education levels, 5 marital states as the five keys: many sample uniques; income; a weight;
households of two). Each size prints the median of the repeats and the first call (which pays
for the imports, matplotlib's among them). Goals: every screen under 1 s on 1e5 records, the
risk screen under 5 s on 1e6.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROLES = {"person_id": "identifier", "code": "identifier", "sex": "quasi", "age": "quasi", "region": "quasi",
         "education": "quasi", "marital": "quasi", "income": "confidential", "weight": "weight",
         "hhid": "household"}


def synthetic(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "person_id": np.arange(1, rows + 1),
        "code": [f"P{i:08d}" for i in range(rows)],
        "sex": rng.choice(["F", "M"], rows),
        "age": rng.integers(0, 100, rows),
        "region": rng.choice([f"region {i:03d}" for i in range(200)], rows),
        "education": rng.choice(list("ABCDEFG"), rows),
        "marital": rng.choice(["single", "married", "divorced", "widowed", "other"], rows),
        "income": np.round(rng.lognormal(10, 0.5, rows), 2),
        "weight": np.round(rng.uniform(5, 50, rows), 3),
        "hhid": np.arange(rows) // 2,
    })


def timed(fn, repeats: int) -> tuple[float, float]:
    """(median, first) wall time in seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--suda", action="store_true", help="also time the SUDA2 job")
    args = parser.parse_args()
    from sdckit.app import session as work

    print(f"sample beyond {work.SAMPLE_RECORDS:,} records; median of {args.repeats} (first call)")
    for rows in args.rows:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"survey{rows}.csv"
            synthetic(rows).to_csv(path, index=False)
            size_mb = path.stat().st_size / 1024**2
            loaded = work.open_path(path)
            frame = loaded.frame

            def overview() -> None:
                fresh = work.Loaded(loaded.name, frame, loaded.source)  # nothing cached
                fresh.overview, fresh.suggestions, work.preview(frame)

            def risk() -> None:
                roles = work.check_roles(frame, ROLES)
                figures = work.risk_figures(frame, roles)
                work.risk_plots(frame, roles, figures)

            cases = [("open", lambda: work.open_path(path)), ("overview", overview), ("risk", risk)]
            if args.suda:
                cases.append(("suda", lambda: work.suda_figures(frame, ROLES)))
            for name, fn in cases:
                median, first = timed(fn, args.repeats)
                extra = f"  records with an MSU: {fn()['records_with_msu']:,}" if name == "suda" else ""
                print(f"{rows:>9,} records ({size_mb:5.0f} MB CSV)  {name:9s}: {median:7.3f} s  ({first:.3f} s){extra}")


if __name__ == "__main__":
    main()
