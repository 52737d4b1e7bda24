"""Benchmark of the random generator (issue 19 item 9): the cryptographic AES-counter generator
sdckit uses against numpy's PCG64 and Philox, side by side in one run.

Prints, for 10^7 draws of each kind, the median time of each generator and its ratio to PCG64, and
the time of a whole release (additive noise on 10^6 x 4). A cryptographic generator is worth some
speed: the noise is the protection, and PCG64's state can be recovered from its outputs.

Run: PYTHONPATH=src python benchmarks/bench_rng.py [--repeats 5] [--n 10000000]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from randomgen import AESCounter

from _harness import median_seconds

from sdckit import AdditiveNoise, protect
from sdckit.core.random import new_seed

GENERATORS = {
    "PCG64 (numpy default)": lambda: np.random.Generator(np.random.PCG64(1)),
    "Philox (numpy)": lambda: np.random.Generator(np.random.Philox(1)),
    "AESCounter (sdckit)": lambda: np.random.Generator(AESCounter(np.random.SeedSequence(1))),
}
DRAWS = {
    "uniform": lambda g, n: g.random(n),
    "normal": lambda g, n: g.standard_normal(n),
    "laplace": lambda g, n: g.laplace(size=n),
    "64-bit integers": lambda g, n: g.integers(0, 2**63 - 1, n),
}



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=10_000_000)
    args = parser.parse_args()
    print(f"median of {args.repeats} runs, {args.n:,} draws each")
    print(f"{'draw':<16}" + "".join(f"{name:>26}" for name in GENERATORS))
    for draw, fn in DRAWS.items():
        row = {}
        for name, make in GENERATORS.items():
            gen = make()
            row[name] = median_seconds(lambda: fn(gen, args.n), args.repeats)
        base = row["PCG64 (numpy default)"]
        print(f"{draw:<16}" + "".join(f"{t * 1000:>14.0f} ms ({t / base:4.2f}x)" for t in row.values()))
    data = pd.DataFrame(np.random.default_rng(0).normal(size=(1_000_000, 4)), columns=list("abcd"))
    seed = new_seed()
    t = median_seconds(lambda: protect(data, [AdditiveNoise(alpha=0.1)], seed=seed), args.repeats)
    print(f"protect(additive noise, 1e6 x 4) with the AES-counter generator: {t * 1000:.0f} ms")


if __name__ == "__main__":
    main()
