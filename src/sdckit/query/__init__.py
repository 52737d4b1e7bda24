"""The protected query service (DESIGN.md section 7; seed 002 section 4.6.2).

A FastAPI app over DuckDB answers a SQL subset (:mod:`sdckit.query.sql`) either with
differential privacy under an exact hard budget (:mod:`sdckit.query.noisy`) or exactly under
query-set-size control and an auditor (:mod:`sdckit.query.restricted`). Analysts, budgets and
the audit log live in a SQLite state database (:mod:`sdckit.query.state`).

The server's modules (FastAPI, uvicorn) are imported only when the server is built, so that
``from sdckit.query import Client`` stays light.
"""

from sdckit.core.lazy import lazy_exports

__all__ = ["Client", "QueryError", "ServiceUnreachable", "ServiceConfig", "TableConfig", "load_config"]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "Client": "sdckit.query.client",
    "QueryError": "sdckit.query.client",
    "ServiceUnreachable": "sdckit.query.client",
    "ServiceConfig": "sdckit.query.config",
    "TableConfig": "sdckit.query.config",
    "load_config": "sdckit.query.config",
})
