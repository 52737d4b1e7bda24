"""The protected query service (DESIGN.md section 7; seed 002 section 4.6.2).

A FastAPI app over DuckDB answers a SQL subset (:mod:`sdckit.query.sql`) either with
differential privacy under an exact hard budget (:mod:`sdckit.query.noisy`) or exactly under
query-set-size control and an auditor (:mod:`sdckit.query.restricted`). Analysts, budgets and
the audit log live in a SQLite state database (:mod:`sdckit.query.state`).

The server's modules (FastAPI, uvicorn) are imported only when the server is built, so that
``from sdckit.query import Client`` stays light.
"""

from sdckit.query.client import Client, QueryError, ServiceUnreachable
from sdckit.query.config import ServiceConfig, TableConfig, load_config

__all__ = ["Client", "QueryError", "ServiceUnreachable", "ServiceConfig", "TableConfig", "load_config"]
