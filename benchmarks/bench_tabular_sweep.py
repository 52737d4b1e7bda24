"""Sweep of cell suppression over every 2-4 dimensional table of sdcMicro's testdata and EIA data
under MinFrequency(3), Dominance(n=2, k=85) and PPercent(10) (issue 27, part 4): ``optimal`` on
tables of up to 2,000 cells, ``fast`` on tables of up to 3,000 cells (one HiGHS thread). Prints,
per case, the cells, primaries, secondaries, wall-clock and CPU time (the CPU time of this process:
the HiGHS thread included, the machine's load excluded) and the audit's verdict; a case that raises is
printed with its error (the goal: none raises, every one is audited safe, each within 60 s).

Run: PYTHONPATH=src python benchmarks/bench_tabular_sweep.py [--data testdata|eia|both]
     [--dims 2,3,4] [--rules freq,dom,p] [--methods optimal,fast] [--only SUBSTRING]
     [--vars a,b,c] [--limit N] [--time-limit S]

Time limits are CPU seconds (``suppress``'s default: ``optimal`` 50 s, then its best pattern with
the gap; ``fast``'s polish capped at 40 s), so the figures hold on a loaded machine.

Measured 28 Nov 2026 (issue 27, round 3; load average 9-21 on 2 shared cores; CPU seconds):

=========================================  =====  =========  =======  ===========  ==========
case                                       cells  non-empty  method   secondaries  CPU s
=========================================  =====  =========  =======  ===========  ==========
urbrur x roof x walls x relat, Dominance     864        420  optimal  106 proved   33.5
roof x water x relat x sex, MinFrequency   2,592      1,143  fast     366          52.6
roof x water x relat x sex, Dominance      2,592      1,143  fast     388          <= 53.2
walls x water x relat x sex, MinFrequency  1,728        999  fast     309          <= 47.9
every 2-D, 3-D table (38; 228 cases)       <= 952            both     all proved   <= 11.8
4-D, 26 cases of 6 tables (urbrur x ...)   <= 2,592          both     11/12 proved <= 50.9
urbrur x roof x walls x relat, MinFrequency  864        420  optimal  107 gap 0.2% 50.9
=========================================  =====  =========  =======  ===========  ==========

Every case audited safe, none raised. "<=" on a single case: measured before the LP
first-solve fix (``tabular/lp.py``), which only made the LPs faster; on a group: the longest.
The 2-D/3-D testdata tables ran before that fix too. Not run this round:
the remaining 4-D tables and testdata's electcon and hhcivil (see DESIGN.md §6.p).

Tables: testdata over urbrur, roof, walls, water (3 groups), electcon, relat (2 groups), sex,
hhcivil, response income; EIA over STATE (4 census regions), MONTH (4 quarters) and SIZE (the
utility's annual total sales in quartiles, S1-S4), response TOTREVENUE, contributions per utility
(holding UTILITYID). Data: /work/shared/data/sdcmicro/{testdata,EIA}.csv when present, else
tests/data/sdcmicro/testdata.csv.gz (EIA is then skipped).
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import pandas as pd

from sdckit.tabular import Dominance, MinFrequency, PPercent, Table, suppress

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/data/sdcmicro")
OPTIMAL_MAX, FAST_MAX = 2000, 3000

WATER = {"1": "W1", "2": "W1", "3": "W1", "4": "W2", "5": "W2", "6": "W3", "7": "W3", "9": "W3"}
RELAT = {"1": "R1", "2": "R1", "3": "R1", **{str(k): "R2" for k in range(4, 10)}}
REGIONS = {"NE": "CT ME MA NH RI VT NJ NY PA", "MW": "IL IN MI OH WI IA KS MN MO NE ND SD",
           "S": "DE DC FL GA MD NC SC VA WV AL KY MS TN AR LA OK TX",
           "W": "AZ CO ID MT NV NM UT WY AK CA HI OR WA"}
STATE = {s: f"R-{r}" for r, states in REGIONS.items() for s in states.split()}  # NE is a state too
MONTH = {str(m): f"Q{(m - 1) // 3 + 1}" for m in range(1, 13)}
RULES = {"freq": ("MinFrequency(3)", MinFrequency(3)), "dom": ("Dominance(2,85)", Dominance(n=2, k=85)),
         "p": ("PPercent(10)", PPercent(10))}


def testdata() -> tuple[pd.DataFrame, dict, dict] | None:
    for p in (SHARED / "testdata.csv", ROOT / "tests/data/sdcmicro/testdata.csv.gz"):
        if p.exists():
            dims = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
            d = pd.read_csv(p).astype({c: str for c in dims})
            return d, {"dims": dims, "response": "income", "holding": None}, {"water": WATER, "relat": RELAT}
    return None


def eia() -> tuple[pd.DataFrame, dict, dict] | None:
    p = SHARED / "EIA.csv"
    if not p.exists():
        return None
    d = pd.read_csv(p)
    sales = d.groupby("UTILITYID")["TOTSALES"].sum()
    size = pd.qcut(sales.rank(method="first"), 4, labels=["S1", "S2", "S3", "S4"])
    d["SIZE"] = d["UTILITYID"].map(size).astype(str)
    d = d.astype({"STATE": str, "MONTH": str, "UTILITYID": str})
    return d, {"dims": ["STATE", "MONTH", "SIZE"], "response": "TOTREVENUE", "holding": "UTILITYID"}, \
        {"STATE": STATE, "MONTH": MONTH}


def cases(name: str, data, dims_wanted: set[int], pool: set[str] | None = None):
    frame, spec, hier = data
    variables = [d for d in spec["dims"] if pool is None or d in pool]
    for k in sorted(dims_wanted):
        for dims in itertools.combinations(variables, k):
            yield f"{name} {' x '.join(dims)}", frame, list(dims), {d: hier[d] for d in dims if d in hier}, spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="both", choices=("testdata", "eia", "both"))
    ap.add_argument("--dims", default="2,3,4")
    ap.add_argument("--rules", default="freq,dom,p")
    ap.add_argument("--methods", default="optimal,fast")
    ap.add_argument("--only", default=None, help="run only the tables whose name contains this")
    ap.add_argument("--vars", default=None, help="comma-separated: only tables over these dimensions")
    ap.add_argument("--limit", type=int, default=None, help="at most this many tables")
    ap.add_argument("--time-limit", type=float, default=None, help="passed to suppress (default: none)")
    args = ap.parse_args()
    sources = []
    if args.data in ("testdata", "both") and (t := testdata()) is not None:
        sources.append(("testdata", t))
    if args.data in ("eia", "both") and (e := eia()) is not None:
        sources.append(("EIA", e))
    dims_wanted = {int(x) for x in args.dims.split(",")}
    rules = [RULES[r] for r in args.rules.split(",")]
    methods = args.methods.split(",")
    done, worst, failures = 0, 0.0, 0
    for source, data in sources:
        for name, frame, dims, hier, spec in cases(source, data, dims_wanted,
                                                           set(args.vars.split(",")) if args.vars else None):
            if args.only and args.only not in name:
                continue
            if args.limit is not None and done >= args.limit:
                break
            t0 = time.perf_counter()
            table = Table.from_microdata(frame, dims, hier, response=spec["response"], holding=spec["holding"])
            built = time.perf_counter() - t0
            n = len(table.cells)
            todo = [m for m in methods if n <= (OPTIMAL_MAX if m == "optimal" else FAST_MAX)]
            if not todo:
                print(f"{name}: {n:,} cells, skipped (above {FAST_MAX:,})", flush=True)
                continue
            done += 1
            print(f"{name}: {n:,} cells ({int((~table.empty).sum()):,} non-empty), built in {built:.2f} s", flush=True)
            for label, rule in rules:
                for m in todo:
                    t0, c0 = time.perf_counter(), time.process_time()
                    try:
                        r = suppress(table, rule, method=m, cost="value", time_limit=args.time_limit)
                        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
                        worst = max(worst, cpu)
                        verdict = "safe" if r.audit.safe else "UNSAFE"
                        extra = (" proved" if r.optimal else f" gap {r.gap:.1%}" if r.gap else "") if m == "optimal" else ""
                        print(f"  {label:16s} {m:8s} primaries {r.primaries:4d} secondaries {r.secondaries:4d} "
                              f"time {dt:6.1f} s (cpu {cpu:6.1f} s)  audit {verdict} ({r.audit.lp_solved} LPs){extra}", flush=True)
                        failures += not r.audit.safe
                    except Exception as exc:  # noqa: BLE001 - the sweep reports every failure
                        failures += 1
                        print(f"  {label:16s} {m:8s} FAILED after {time.perf_counter() - t0:.1f} s: "
                              f"{type(exc).__name__}: {exc}", flush=True)
    print(f"\n{done} tables, longest case {worst:.1f} s CPU, {failures} failed or unsafe")


if __name__ == "__main__":
    main()
