"""Benchmark: engines beyond one machine's memory (issue 17, DESIGN.md section 8). From the
repository root:

    PYTHONPATH=src python benchmarks/bench_scale.py [--n 10000000] [--cases protect,kanon,mondrian,perm,mdav]
    PYTHONPATH=src python benchmarks/bench_scale.py --cases dask --n 100000000   # the 1e8 run

Each case runs in its own process; its wall time and peak resident memory (``ru_maxrss`` of the
process and the processes it waited for, from ``os.wait4``) are printed, with the ratio to the
in-memory engine where both run:

* ``protect``: ``n`` records (5 numeric, 3 categorical quasi-identifiers) in Parquet; additive
  noise on the 5 numeric columns and top coding via ``sdckit protect recipe.toml --memory 2GB``
  (streamed by itself: the data would not fit the budget) against ``--engine memory``. Goal
  < 3 minutes and < 2 GB at 1e7.
* ``kanon``: optimal full-domain k-anonymity (Adult's 8 quasi-identifiers and hierarchies,
  Adult replicated x100: 3,016,200 records, k=500) by ``search_file`` on the Parquet file
  (DuckDB ``GROUP BY`` then the search on the frequency table) against
  ``FullDomainGeneralization.partition`` in memory (reading included in both). Goal < 10 s;
  ARX: 0.36 s search at k=500 in 5.8 GB.
* ``mondrian``: Mondrian k=5 on ``--mondrian-n`` x 5 uniform columns: ``mondrian_file`` on a
  2-worker LocalCluster (KD cells of 125,000 records, strict Mondrian per cell) against
  ``Mondrian.partition`` in memory.
* ``assess``: ``permutation.assess`` (reverse mapping, intruder linkage and verification) on
  ``--perm-n`` records x 5 with a sample of 20,000 originals against every released record.
* ``perm``: the report's permutation assessment on ``--perm-n`` records x 5 (released = original
  + 10% noise) with its sampling (20,000 originals against all released records). Goal: 1e7
  in < 5 minutes.
* ``mdav``: microaggregation k=3 of 1e6 x 5 (partitioned MDAV past 1e5); exact MDAV took 266 s.
* ``dask``: ``n`` records row-wise (noise + top coding) with ``protect_file(engine="dask")`` on
  a 2-worker LocalCluster (each worker limited to 1 GB).
* ``globals``: ``n`` records, PRAM (``p_keep`` on region, invariant on education) and global
  recoding (10 equal-width bins of income, breaks of age) by ``protect_file(engine="duckdb")``
  (a pass of value counts / ranges, then the chunks) against ``protect`` in memory; the
  releases' fingerprints are compared.
* ``rankswap``: ``n`` records, rank swapping p=15 of income and age by ``rank_swap_file``
  (DuckDB external sort with a 1 GB limit, the partners chosen in stretches) against
  ``RankSwapping`` in memory; the releases' fingerprints are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "tests" / "data" / "adult"
QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
SEED = "5eed5eed5eed5eed5eed5eed5eed5eed"
NUMERIC = ["income", "wealth", "age", "hours", "score"]


# --------------------------------------------------------------------------- data
def generate(path: Path, n: int, batch: int = 1_000_000) -> None:
    """``n`` records, 5 numeric and 3 categorical columns, written batch by batch."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(17)
    regions = np.array([f"region{i:02d}" for i in range(10)])
    education = np.array([f"edu{i:02d}" for i in range(16)])
    writer = None
    for start in range(0, n, batch):
        m = min(batch, n - start)
        table = pa.table({
            "income": rng.lognormal(10, 0.8, m), "wealth": rng.lognormal(11, 1.2, m),
            "age": rng.integers(16, 95, m), "hours": rng.normal(38, 8, m), "score": rng.uniform(0, 100, m),
            "region": regions[rng.integers(0, 10, m)], "sex": np.where(rng.random(m) < 0.5, "F", "M"),
            "education": education[rng.integers(0, 16, m)],
        })
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=131_072)
    writer.close()


RECIPE = """
seed = "{seed}"
[input]
path = "{data}"
[schema]
quasi = ["age", "region", "sex", "education"]
confidential = ["income", "wealth", "hours", "score"]
[[method]]
name = "additive_noise"
alpha = 0.1
columns = {numeric}
[[method]]
name = "top_bottom_coding"
top = 250000.0
columns = ["income", "wealth"]
[output]
dir = "{out}"
"""


def timed(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``cmd``; its wall time, the peak RSS of it and its waited-for children (``os.wait4``),
    and its output. A child's peak RSS starts at this process's RSS when it forks (Linux keeps
    the high-water mark across exec), so this process holds no data: every case, data
    generation included, runs in a child."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "peak_gb": round(usage.ru_maxrss * 1024 / 1e9, 3), "stdout": stdout}


def child(case: str, *args: str) -> dict:
    return timed([sys.executable, __file__, "--child", case, *args], env={"PYTHONPATH": str(ROOT / "src")})


def line(label: str, r: dict, base: dict | None = None) -> None:
    ratio = "" if base is None else (f"  ratio to memory: time {r['wall_s'] / base['wall_s']:.2f}, "
                                     f"RSS {r['peak_gb'] / base['peak_gb']:.2f}")
    print(f"{label:<52} {r['wall_s']:>8.1f} s {r['peak_gb']:>7.2f} GB{ratio}", flush=True)


# --------------------------------------------------------------------------- cases (children)
def generate_in_child(path: Path, n: int) -> None:
    """:func:`generate` in a child process (its memory is not the parent's), saying how big."""
    start = time.perf_counter()
    child("generate", str(path), str(n))
    print(f"(generated {n:,} records, {path.stat().st_size / 1e9:.2f} GB Parquet, "
          f"in {time.perf_counter() - start:.0f} s)", flush=True)


def run_child(case: str, args: list[str]) -> None:
    if case == "generate":
        generate(Path(args[0]), int(args[1]))
    elif case == "adult":
        import numpy as np
        import pandas as pd

        adult = pd.read_csv(ADULT / "adult.csv.gz", sep=";", usecols=QI8)
        adult.iloc[np.arange(int(args[1]) * len(adult)) % len(adult)].reset_index(drop=True).to_parquet(args[0])
    elif case == "same":
        import pandas as pd

        print(pd.read_parquet(args[0]).equals(pd.read_parquet(args[1])))
    elif case == "search":
        from sdckit.anonymity import Hierarchy
        from sdckit.pipeline import search_file

        hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
        result = search_file(args[0], hierarchies, int(args[1]), engine="duckdb")
        print(json.dumps({"node": result.node, "combinations": result.extra["combinations"]}))
    elif case == "fulldomain":
        import pandas as pd

        from sdckit.anonymity import FullDomainGeneralization, Hierarchy

        hierarchies = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in QI8}
        frame = pd.read_parquet(args[0])
        part = FullDomainGeneralization(int(args[1]), hierarchies).partition(frame)
        print(json.dumps({"node": list(part.info["node"].values())}))
    elif case == "uniform":
        import numpy as np
        import pandas as pd

        rng = np.random.default_rng(0)
        n = int(args[1])
        pd.DataFrame(rng.uniform(0, 1000, size=(n, 5)), columns=[f"x{i}" for i in range(5)]).to_parquet(
            args[0], row_group_size=131_072)
    elif case == "mondrian":
        import pandas as pd

        from sdckit.anonymity import Mondrian

        cont = pd.read_parquet(args[0])
        part = Mondrian(5, tuple(cont.columns)).partition(cont)
        print(json.dumps({"classes": int(part.n_classes), "loss": part.info["loss"]}))
    elif case == "mondrian_dask":
        import pyarrow.parquet as pq

        from sdckit.anonymity import Mondrian
        from sdckit.engine.distributed import dask_client
        from sdckit.pipeline import mondrian_file

        quasi = tuple(pq.read_schema(args[0]).names)
        with dask_client(workers=2, processes=True, memory_limit="2GB") as client:
            info = mondrian_file(args[0], args[1], Mondrian(5, quasi), cell_size=125_000, client=client)
        print(json.dumps({k: info[k] for k in ("cells", "classes", "smallest_class", "loss")}))
    elif case == "mdav":
        import numpy as np
        import pandas as pd

        from sdckit.masking import Microaggregation

        rng = np.random.default_rng(0)
        frame = pd.DataFrame(rng.lognormal(size=(int(args[0]), 5)), columns=list("abcde"))
        info = Microaggregation(k=3).run(frame, seed=SEED).info
        print(json.dumps({"sse_ratio": info["sse_ratio"], "partitioned": info.get("partitioned_mdav")}))
    elif case == "assess":
        import numpy as np
        import pandas as pd

        from sdckit.permutation.assess import assess

        n, m = int(args[0]), 5
        rng = np.random.default_rng(1)
        x = pd.DataFrame(rng.standard_normal((n, m)) @ (0.7 * np.eye(m) + 0.3), columns=[f"c{j}" for j in range(m)])
        y = x + rng.standard_normal((n, m)) * 0.1
        start = time.perf_counter()
        result = assess(x, y, sample=20_000, max_batches=4, seed=1)
        summary = result.verification
        print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "sampled": result.sampled,
                          "p_value": getattr(summary, "p_value", None)}, default=str))
    elif case == "perm":  # the report benchmark's data and run, at 5 columns
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_report_scale import report_steps

        steps, _ = report_steps(int(args[0]), 5)
        print(json.dumps({"steps_s": steps}))
    elif case == "dask":
        from sdckit.engine import protect_file
        from sdckit.engine.distributed import dask_client
        from sdckit.masking import AdditiveNoise, TopBottomCoding

        methods = [AdditiveNoise(alpha=0.1, columns=NUMERIC), TopBottomCoding(top=250000.0, columns=["income"])]
        with dask_client(workers=2, processes=True, memory_limit="1GB") as client:
            release = protect_file(args[0], args[1], methods, engine="dask", client=client, seed=SEED)
        print(json.dumps({"records": release.manifest["output"]["records"]}))
    elif case in ("globals_stream", "globals_memory"):
        from sdckit.masking import GlobalRecoding, Pram

        methods = [Pram(p_keep=0.8, columns=["region"]), Pram(p_keep=0.7, invariant=True, columns=["education"]),
                   GlobalRecoding(bins=10, columns=["income"]),
                   GlobalRecoding(bins=[0, 25, 45, 65, 120], columns=["age"])]
        if case == "globals_stream":
            from sdckit.engine import protect_file

            release = protect_file(args[0], args[1], methods, engine="duckdb", seed=SEED)
            print(json.dumps({"fingerprint": release.manifest["output"]["fingerprint"]}))
        else:
            import pandas as pd

            from sdckit.pipeline import protect

            release = protect(pd.read_parquet(args[0]), methods, seed=SEED)
            release.data.to_parquet(args[1])
            print(json.dumps({"fingerprint": release.manifest["output"]["fingerprint"]}))
    elif case in ("rankswap_stream", "rankswap_memory"):
        if case == "rankswap_stream":
            from sdckit.engine.external_sort import rank_swap_file

            release = rank_swap_file(args[0], args[1], 15.0, ["income", "age"], seed=SEED, memory=1_000_000_000)
            print(json.dumps({"fingerprint": release.fingerprint, "swapped": release.info["swapped_share"]}))
        else:
            import pandas as pd

            from sdckit.masking import RankSwapping
            from sdckit.pipeline import protect

            release = protect(pd.read_parquet(args[0]), [RankSwapping(p=15.0, columns=["income", "age"])], seed=SEED)
            release.data.to_parquet(args[1])
            print(json.dumps({"fingerprint": release.manifest["output"]["fingerprint"],
                              "swapped": release.steps[0].info["swapped_share"]}))
    else:
        raise SystemExit(f"unknown case {case}")


# --------------------------------------------------------------------------- driver
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--perm-n", type=int, default=10_000_000)
    parser.add_argument("--mondrian-n", type=int, default=1_000_000)
    parser.add_argument("--cases", default="protect,kanon,mondrian,assess,mdav")
    parser.add_argument("--dir", default=None, help="working folder (default: a temporary one)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args.child[0], args.child[1:])
        return
    cases = args.cases.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.dir) as tmp:
        work = Path(tmp)
        print(f"{'case':<52} {'wall':>10} {'peak RSS':>10}")
        if "protect" in cases:
            data = work / "data.parquet"
            generate_in_child(data, args.n)
            recipe = work / "recipe.toml"
            recipe.write_text(RECIPE.format(seed=SEED, data=data, numeric=json.dumps(NUMERIC), out=work / "out"))
            cli = [sys.executable, "-m", "sdckit", "protect", str(recipe), "--no-report"]
            env = {"PYTHONPATH": str(ROOT / "src")}
            streamed = timed([*cli, "--memory", "2GB", "-o", str(work / "s")], env)
            manifest = json.loads((work / "s" / "data_protected.manifest.json").read_text())
            engine = manifest.get("engine", {}).get("name", "memory")
            memory = timed([*cli, "--engine", "memory", "-o", str(work / "m")], env)
            line(f"protect {args.n:,} rows, --memory 2GB ({engine})", streamed, memory)
            line(f"protect {args.n:,} rows, --engine memory", memory)
            same = (work / "s" / "data_protected.parquet").read_bytes() == (work / "m" / "data_protected.parquet").read_bytes()
            if not same:  # compared in a child, so that this process stays small (see timed())
                same = "True" in child("same", str(work / "s" / "data_protected.parquet"),
                                       str(work / "m" / "data_protected.parquet"))["stdout"]
            print(f"  same release from both engines: {same}")
            data.unlink()
        if "kanon" in cases:
            path = work / "adult100.parquet"
            child("adult", str(path), "100")
            on_file = child("search", str(path), "500")
            in_memory = child("fulldomain", str(path), "500")
            line("full-domain k=500, Adult x100 (3,016,200), duckdb", on_file, in_memory)
            line("full-domain k=500, Adult x100, memory", in_memory)
            print(f"  nodes: {on_file['stdout'].strip()} / {in_memory['stdout'].strip()}")
        if "mondrian" in cases:
            path = work / "uniform.parquet"
            child("uniform", str(path), str(args.mondrian_n))
            memory = child("mondrian", str(path))
            dask = child("mondrian_dask", str(path), str(work / "mondrian_out.parquet"))
            line(f"Mondrian k=5, {args.mondrian_n:,} x 5, dask cells of 125,000", dask, memory)
            line(f"Mondrian k=5, {args.mondrian_n:,} x 5, memory", memory)
            print(f"  dask: {dask['stdout'].strip()}  memory: {memory['stdout'].strip()}")
        if "assess" in cases:
            r = child("assess", str(args.perm_n))
            line(f"permutation.assess, {args.perm_n:,} x 5, sample 20,000", r)
            print(f"  {r['stdout'].strip()}")
        if "perm" in cases:
            r = child("perm", str(args.perm_n))
            line(f"permutation assessment (report), {args.perm_n:,} x 5, sampled", r)
            print(f"  steps: {r['stdout'].strip()}")
        if "mdav" in cases:
            r = child("mdav", "1000000")
            line("MDAV k=3, 1e6 x 5 (partitioned)", r)
            print(f"  {r['stdout'].strip()}")
        for case in ("globals", "rankswap"):
            if case not in cases:
                continue
            data = work / f"{case}.parquet"
            generate_in_child(data, args.n)
            streamed = child(f"{case}_stream", str(data), str(work / f"{case}_s.parquet"))
            memory = child(f"{case}_memory", str(data), str(work / f"{case}_m.parquet"))
            what = {"globals": "PRAM x2 + recoding x2", "rankswap": "rank swapping p=15, 2 columns"}[case]
            line(f"{what}, {args.n:,} rows, duckdb", streamed, memory)
            line(f"{what}, {args.n:,} rows, memory", memory)
            same = json.loads(streamed["stdout"])["fingerprint"] == json.loads(memory["stdout"])["fingerprint"]
            print(f"  same release (fingerprint) from both engines: {same}", flush=True)
            data.unlink()
        if "dask" in cases:
            data = work / "big.parquet"
            generate_in_child(data, args.n)
            r = child("dask", str(data), str(work / "big_out.parquet"))
            line(f"row-wise {args.n:,} rows, dask LocalCluster 2 x 1GB", r)


if __name__ == "__main__":
    main()
