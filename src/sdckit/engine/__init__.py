"""Where the work runs (DESIGN.md section 8): in memory (the default), out of core through
DuckDB and streamed files (``"duckdb"``), or on a Dask cluster (``"dask"``).

A method declares what it needs (:attr:`sdckit.core.method.Method.needs`); row-wise methods run
by logical chunks with random streams spawned per chunk index from the one seed
(:mod:`sdckit.core.rowwise`), so every engine gives the same bytes. Aggregation-driven work runs
on frequency tables computed by DuckDB ``GROUP BY`` or Dask (:mod:`sdckit.engine.aggregate`).
"""

from sdckit.core.lazy import lazy_exports

__all__ = ["ENGINES", "StreamedRelease", "check_engine", "parse_memory", "protect_file", "should_stream"]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "ENGINES": "sdckit.engine.stream",
    "StreamedRelease": "sdckit.engine.stream",
    "check_engine": "sdckit.engine.stream",
    "parse_memory": "sdckit.engine.budget",
    "protect_file": "sdckit.engine.stream",
    "should_stream": "sdckit.engine.budget",
})
