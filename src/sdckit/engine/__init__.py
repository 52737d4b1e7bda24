"""Where the work runs (DESIGN.md section 8): in memory (the default), out of core through
DuckDB and streamed files (``"duckdb"``), or on a Dask cluster (``"dask"``).

A method declares what it needs (:attr:`sdckit.core.method.Method.needs`); row-wise methods run
by logical chunks with random streams spawned per chunk index from the one seed
(:mod:`sdckit.core.rowwise`), so every engine gives the same bytes. Aggregation-driven work runs
on frequency tables computed by DuckDB ``GROUP BY`` or Dask (:mod:`sdckit.engine.aggregate`).
"""

from sdckit.engine.budget import parse_memory, should_stream
from sdckit.engine.stream import ENGINES, StreamedRelease, check_engine, protect_file

__all__ = ["ENGINES", "StreamedRelease", "check_engine", "parse_memory", "protect_file", "should_stream"]
