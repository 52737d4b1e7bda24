"""Benchmark of the verification's sequential verdict (issue 27): CPU seconds per verification.

Eight typical assessments at n = 1,000 and 2,000: m = 4 correlated normal attributes (correlation
0.5) released with additive noise of 1% and 100% of each variance and as multivariate-normal
synthetic data, and a release keeping AGE and ZIP (integer, many ties) with INCOME shuffled.
Each case runs under two assessment seeds; printed: mean CPU seconds (``time.process_time``,
which stays meaningful on a shared machine) and per seed ``p/verdict/replicates`` (``batches``
on versions before the sequential test).

Usage::

    PYTHONPATH=src python benchmarks/bench_verdict.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd


def normal(n: int, m: int = 4, seed: int = 0, rho: float = 0.5) -> tuple[np.random.Generator, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    cov = np.full((m, m), rho) + (1 - rho) * np.eye(m)
    x = pd.DataFrame(rng.multivariate_normal(np.zeros(m), cov, size=n), columns=[f"x{j}" for j in range(m)])
    return rng, x


def shuffled_income(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0, 0, 0], [[1, .3, .5], [.3, 1, .2], [.5, .2, 1]], size=n)
    age = np.clip(np.round(45 + 15 * z[:, 0]), 18, 90).astype(int)
    zipcode = 28000 + np.clip(np.round(100 + 30 * z[:, 1]), 0, 200).astype(int)
    income = np.round(np.exp(10.3 + 0.5 * z[:, 2]), -2)
    x = pd.DataFrame({"AGE": age, "ZIP": zipcode, "INCOME": income})
    return x, x.assign(INCOME=rng.permutation(income))


def cases() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    out = {}
    for n in (1000, 2000):
        rng, x = normal(n)
        out[f"noise 1%, n={n}"] = (x, x + rng.normal(scale=0.1, size=x.shape))
        out[f"noise 100%, n={n}"] = (x, x + rng.normal(scale=1.0, size=x.shape))
        out[f"synthetic, n={n}"] = (x, pd.DataFrame(rng.multivariate_normal(x.mean(), x.cov(), size=n),
                                                    columns=x.columns))
        out[f"INCOME shuffled, n={n}"] = shuffled_income(n)
    return out


def main() -> None:
    from sdckit.permutation import verify_linkage

    total = 0.0
    for name, (x, y) in cases().items():
        seconds, runs = [], []
        for s in range(2):
            start = time.process_time()
            v = verify_linkage(x, y, seed=10 + s)
            seconds.append(time.process_time() - start)
            runs.append(f"{v.p_value:.3f}/{getattr(v, 'verdict', '-')}/{v.batches}")
        total += float(np.mean(seconds))
        print(f"{name:24s} {np.mean(seconds):6.2f} s  {runs}", flush=True)
    print(f"{'total':24s} {total:6.2f} s")


if __name__ == "__main__":
    main()
