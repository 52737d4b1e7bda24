"""Row-wise methods in logical chunks: one seed, the same output whatever the engine (DESIGN.md §8).

A method that declares ``needs = "rows"`` transforms each record on its own, given at most a few
statistics of the whole column (a variance, a count). Every engine — in memory, streamed over a
file, distributed on Dask — runs such a method over the same **logical chunks**: rows
``c * CHUNK_ROWS .. (c + 1) * CHUNK_ROWS - 1`` form chunk ``c`` whatever the physical batches a
reader delivers. Chunk ``c`` draws from its own generator, spawned from the step's key by the
chunk's index (``SeedSequence(key, spawn_key=(c,))``), and the statistics are partial results per
logical chunk merged in chunk order. So the same seed and data give the same bytes out in every
engine and for every batch size.

The step's key is 128 bits drawn from the pipeline's one generator when the step runs, so a
pipeline that mixes row-wise and other methods still consumes one random stream in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from sdckit.core.outcome import Outcome
from sdckit.core.random import crypto_generator, derive_seed

if TYPE_CHECKING:  # pragma: no cover
    from sdckit.core.schema import Schema

#: Rows of a logical chunk. Fixed: changing it changes every row-wise release.
CHUNK_ROWS = 65_536

#: What a method may declare it needs; the engine chooses how to run it from this.
NEEDS = ("rows", "groups", "ranks", "neighbours", "all")


def step_key(rng: np.random.Generator) -> int:
    """The 128-bit key of one row-wise step, drawn from the pipeline's generator."""
    return derive_seed(rng)


def chunk_generator(key: int, index: int) -> np.random.Generator:
    """The generator of logical chunk ``index`` of the step keyed ``key`` (AES counter mode)."""
    return crypto_generator(np.random.SeedSequence(key, spawn_key=(int(index),)))


def chunk_bounds(n: int, size: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """``(start, stop)`` of each logical chunk of ``n`` rows (at least one, possibly empty)."""
    return [(a, min(a + size, n)) for a in range(0, max(n, 1), size)]


def rechunk(batches: Iterable[pd.DataFrame], size: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
    """Re-cut frames of any sizes into logical chunks of exactly ``size`` rows (the last may be
    shorter), each indexed by its global row numbers."""
    buffer: list[pd.DataFrame] = []
    held = start = 0
    for batch in batches:
        if len(batch) == 0:
            continue
        buffer.append(batch)
        held += len(batch)
        while held >= size:
            whole = pd.concat(buffer, ignore_index=True) if len(buffer) > 1 else buffer[0].reset_index(drop=True)
            chunk, rest = whole.iloc[:size], whole.iloc[size:]
            yield chunk.set_axis(pd.RangeIndex(start, start + size))
            start += size
            buffer, held = ([rest] if len(rest) else []), len(rest)
    if held:
        whole = pd.concat(buffer, ignore_index=True) if len(buffer) > 1 else buffer[0].reset_index(drop=True)
        yield whole.set_axis(pd.RangeIndex(start, start + held))


# --------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class Moments:
    """Count, mean and centred sum of squares per column, mergeable in chunk order (Chan et al.
    1979, the pairwise update), optionally with the centred cross-products (``comoment``)."""

    n: int
    mean: np.ndarray
    m2: np.ndarray
    comoment: np.ndarray | None = None

    @classmethod
    def of(cls, values: np.ndarray, cross: bool = False) -> Moments:
        """The moments of the rows of ``values`` (records x columns)."""
        values = np.asarray(values, dtype=float)
        if len(values) == 0:
            m = values.shape[1]
            return cls(0, np.zeros(m), np.zeros(m), np.zeros((m, m)) if cross else None)
        mean = values.mean(axis=0)
        centred = values - mean
        return cls(len(values), mean, (centred**2).sum(axis=0), centred.T @ centred if cross else None)

    def merge(self, other: Moments) -> Moments:
        if self.n == 0:
            return other
        if other.n == 0:
            return self
        n = self.n + other.n
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n / n)
        m2 = self.m2 + other.m2 + delta**2 * (self.n * other.n / n)
        comoment = None
        if self.comoment is not None and other.comoment is not None:
            comoment = self.comoment + other.comoment + np.outer(delta, delta) * (self.n * other.n / n)
        return Moments(n, mean, m2, comoment)

    def variance(self) -> np.ndarray:
        """Sample variance (ddof=1; a single record has variance 0)."""
        return self.m2 / (self.n - 1) if self.n > 1 else np.zeros_like(self.m2)

    def covariance(self) -> np.ndarray:
        """Sample covariance matrix (ddof=1; a single record gives zeros)."""
        assert self.comoment is not None
        return self.comoment / (self.n - 1) if self.n > 1 else np.zeros_like(self.comoment)


def merge_all(parts: Iterable[Any], merge: Callable[[Any, Any], Any]) -> Any:
    """Merge partial statistics left to right, in chunk order (the order fixes the bits)."""
    out = None
    for part in parts:
        out = part if out is None else merge(out, part)
    return out


def sum_counts(infos: list[dict[str, Any]], *keys: str) -> dict[str, Any]:
    """Per-column counts of the chunks' reports added up, for each of ``keys``."""
    out: dict[str, Any] = {}
    for key in keys:
        total: dict[str, int] = {}
        for info in infos:
            for name, count in info.get(key, {}).items():
                total[name] = total.get(name, 0) + int(count)
        out[key] = total
    return out


class RowwiseMethod(Protocol):
    """What :func:`run_rows` needs of a method (``sdckit.core.method.Method`` has it): the
    row-wise contract, without importing the method base (which imports this module)."""

    def needs_statistics(self) -> bool: ...
    def chunk_statistics(self, chunk: pd.DataFrame, columns: tuple[str, ...]) -> Any: ...
    def merge_statistics(self, first: Any, second: Any) -> Any: ...
    def finish_statistics(self, merged: Any) -> Any: ...
    def transform_rows(self, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
                       rng: np.random.Generator, statistics: Any) -> Any: ...
    def merge_info(self, infos: list[dict[str, Any]], statistics: Any) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- in memory
def run_rows(method: RowwiseMethod, frame: pd.DataFrame, columns: tuple[str, ...], schema: Schema,
             rng: np.random.Generator) -> Outcome:
    """Run a row-wise ``method`` over ``frame`` in memory, by logical chunks (what every other
    engine does over files), and return the whole outcome."""
    key = step_key(rng)
    bounds = chunk_bounds(len(frame))
    stats = None
    if method.needs_statistics():
        stats = method.finish_statistics(merge_all(
            (method.chunk_statistics(frame.iloc[a:b], columns) for a, b in bounds), method.merge_statistics))
    pieces, infos, out_schema = [], [], schema
    for index, (a, b) in enumerate(bounds):
        part = frame.iloc[a:b].copy() if len(bounds) > 1 else frame.copy()
        result = method.transform_rows(part, columns, schema, chunk_generator(key, index), stats)
        outcome = result if isinstance(result, Outcome) else Outcome(result, schema)
        pieces.append(outcome.data)
        infos.append(outcome.info)
        out_schema = outcome.schema
    data = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
    return Outcome(data, out_schema, method.merge_info(infos, stats))
