"""The query service's logic, independent of HTTP: authenticate, parse, charge or audit, answer.

Every request ends in ``(status, JSON body)``; every refusal is ``{"error": "..."}`` with a
sentence the analyst can act on: 400 for SQL sdckit cannot parse or does not support (or a bad
request body), 401 for a missing or wrong key, 403 for what it will not answer (a table the
analyst may not query, the budget, query-set size, the auditor). Every request is appended to the
audit log (analyst, time, SQL, decision, budget charged).

Order in dp mode: parse and plan (nothing charged for a bad query) -> the stored answer of the
same query, if any (no charge) -> charge in one transaction -> compute -> store the answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.core.errors import BudgetExceeded, SdcError
from sdckit.core.random import as_generator
from sdckit.dp.accountant import exact, exact_text
from sdckit.query import bounds, joins, keys, noisy, noisy_gaussian
from sdckit.query.analysts import DEFINITIONS, Analyst
from sdckit.query.config import load_config
from sdckit.query.data import Database
from sdckit.query.derived import describe, derived_of, dp_table
from sdckit.query.generate import aggregate_sql, histogram_sql, magnitude_histogram_sql, quantile_columns
from sdckit.query.bodyfields import BODY_KEYS, BOUND_FIELDS, ROWS_FIELD, groups_asked, rows_asked, state_bounds
from sdckit.query.restricted import Refused, Restricted, check_dimensions
from sdckit.query.sql import UnsupportedQuery, parse
from sdckit.query.state import State, lock_state
from sdckit.query.tables import TableService, table_of

log = logging.getLogger("sdckit.query")

UNAUTHORIZED = ("Missing or wrong API key: send the header 'Authorization: Bearer <key>' with the key "
                "`sdckit analyst add` printed.")
#: The 500 answers (a bug; the request is logged and the traceback goes to the server's log).
QUERY_FAILED = ("The service failed while answering; the request is logged. Any budget already charged for it "
                "stays charged.")
TABLE_FAILED = "The service failed while answering; the request is logged."
#: The privacy-loss fields a dp query sends, per budget definition (issue 32).
_LOSS_FIELDS = {"pure": ("epsilon",), "approx": ("epsilon", "delta"), "zcdp": ("rho",)}

Response = tuple[int, dict[str, Any]]



class NotJSON:
    """The request body was not JSON (the server passes this in its place)."""


def _error(status: int, message: str, **extra: Any) -> Response:
    return status, {"error": message, **extra}


class Service:
    """One service: its configuration, data (DuckDB) and state database.

    Parameters
    ----------
    config_path : path
        The ``service.toml``.
    """

    def __init__(self, config_path: str | Path) -> None:
        config = load_config(config_path)
        self._lock_file = lock_state(config.state)
        self.db = Database(config)
        self.config = self.db.config
        self.state = State(config.state, config.sync)
        self.restricted = Restricted(self.db, self.state, self.config)
        self.tables = TableService(self.db, self.config)  # tables served as tables (sdckit.query.tables)
        # the parsed form depends only on the text and the (fixed) configuration; refusals are not cached
        self._parse = functools.lru_cache(maxsize=4096)(lambda sql: parse(sql, self.config))

    def close(self) -> None:
        """Release the data and the state database's lock (the process may start another service)."""
        self.db.close()
        self._lock_file.close()

    # ------------------------------------------------------------------ helpers
    def _rng(self, stream: int) -> np.random.Generator:
        """OS entropy, or (tests only, ``[service] seed``) the seed's stream number ``stream``."""
        if self.config.seed is None:
            return as_generator(None)
        return as_generator(np.random.SeedSequence(self.config.seed, spawn_key=(stream,)))

    def authenticate(self, key: str | None) -> Analyst | None:
        return self.state.authenticate(key)

    # ------------------------------------------------------------------ endpoints
    def budget(self, key: str | None) -> Response:
        analyst = self.authenticate(key)
        if analyst is None:
            self.state.log(None, None, "refused: authentication (budget)", 401)
            return _error(401, UNAUTHORIZED)
        self.state.log(analyst.name, None, "budget read", 200)
        return 200, analyst.budget()

    def public(self, key: str | None, name: str) -> Response:
        """``GET /v1/public/<name>``: a public table whole (``columns``, ``rows``, and each column's
        ``multiplicity``, the most rows sharing one value: the factor a join on it puts on every
        sensitivity; :mod:`sdckit.query.joins`). No budget; logged like every request."""
        analyst = self.authenticate(key)
        if analyst is None:
            self.state.log(None, None, f"refused: authentication (public {name[:64]})", 401)
            return _error(401, UNAUTHORIZED)
        table = next((t for n, t in self.config.public_tables.items() if n.lower() == str(name).lower()), None)
        if table is None:
            self.state.log(analyst.name, None, "refused: unknown public table", 404)
            return _error(404, f"No public table {name[:64]!r}: the service publishes "
                               f"{', '.join(sorted(self.config.public_tables)) or 'none'}.")
        rows = [list(r) for r in self.db.execute(joins.public_sql(table)).fetchall()]
        self.state.log(analyst.name, None, f"public table {table.name}", 200)
        return 200, {"table": table.name, "columns": list(table.columns), "rows": rows,
                     "multiplicity": table.multiplicity}

    def query(self, key: str | None, body: Any) -> Response:
        analyst, sql = self.authenticate(key), _sql_of(body)
        if analyst is None:
            self.state.log(None, sql, "refused: authentication", 401)
            return _error(401, UNAUTHORIZED)
        return self._answer(analyst, sql, lambda: self._query(analyst, body), "refused: unsupported", "query failed",
                            QUERY_FAILED)

    def _query(self, analyst: Analyst, body: Any) -> Response:
        if isinstance(body, NotJSON):
            raise UnsupportedQuery('The request body must be JSON: {"sql": "SELECT ...", "epsilon": 0.1}.')
        if not isinstance(body, dict):
            raise UnsupportedQuery('The request body must be a JSON object: {"sql": "SELECT ...", "epsilon": 0.1}.')
        extra = sorted(set(body) - BODY_KEYS)
        if extra:
            raise UnsupportedQuery(f"Unknown field {extra[0]!r} in the request: send 'sql' and, in dp mode, "
                                   "'epsilon' (pure), 'epsilon' and 'delta' (approximate DP) or 'rho' (zCDP), "
                                   f"and optionally {', '.join(map(repr, BOUND_FIELDS))}.")
        if "sql" not in body:
            raise UnsupportedQuery("The request needs the field 'sql' holding one SELECT statement.")
        sql = body["sql"]
        if not isinstance(sql, str):
            raise UnsupportedQuery("The 'sql' field must be a string holding one SELECT statement.")
        query = self._parse(sql)
        for name in joins.private_tables(query):
            if not analyst.may_query(name):
                raise _not_allowed(analyst, name)
        if query.table in self.tables.cubes:
            raise Refused(f"The table {query.table!r} is served as tables only (its cells perturbed by the cell key "
                          "method): POST /v1/table {\"table\": ..., \"dimensions\": [...]}.")
        epsilon_given = body.get("epsilon")
        data_keys = dp_table(query, joins.query_table(query, self.config)).keys_from_data(query.group_by)  # (bins: public)
        if query.join is not None and analyst.mode == "restricted":
            raise UnsupportedQuery("Joins are answered in dp mode only: a restricted analyst queries one table.")
        if data_keys and analyst.mode == "restricted":
            raise UnsupportedQuery(f"GROUP BY {data_keys[0]!r} takes its keys from the data (thresholding), a dp "
                                   "mechanism: in restricted mode GROUP BY only columns with a declared domain.")
        derived = derived_of(query)
        values = [d for d in derived if d.kind == "value"]
        if values and analyst.mode == "restricted":
            raise UnsupportedQuery(f"{values[0].name} is a derived value, answered in dp mode only: the restricted mode's "
                                   "auditor reasons over sums of declared columns.")
        if derived and data_keys:
            raise UnsupportedQuery(f"{derived[0].name} is a binned or derived column: answered with groups of declared "
                                   "domains only, not with keys from the data.")
        dp_only = [o for o in query.outputs if o.kind in DP_ONLY]
        if dp_only and analyst.mode == "restricted":
            raise UnsupportedQuery("VAR_POP, STDDEV_POP and COUNT(DISTINCT) are answered in dp mode only: the restricted "
                                   "mode's auditor reasons over exact COUNT and SUM answers.")
        if dp_only and data_keys:
            raise UnsupportedQuery(f"GROUP BY {data_keys[0]!r} takes its keys from the data: VAR_POP, STDDEV_POP and "
                                   "COUNT(DISTINCT) are answered only over groups of declared domains (not yet with "
                                   "keys from the data).")
        if data_keys and analyst.definition != "approx":
            raise UnsupportedQuery(f"GROUP BY {data_keys[0]!r} takes its keys from the data, released by thresholding, "
                                   "which is (epsilon, delta)-DP: this analyst's budget is "
                                   f"{DEFINITIONS[analyst.definition]} (fixed at `analyst add`); group by columns with "
                                   "a declared domain, or ask with an (epsilon, delta) budget.")
        if analyst.mode == "restricted":
            if any(o.kind in ("quantile", "bounds") for o in query.outputs):
                raise UnsupportedQuery("Quantiles, MIN, MAX and BOUNDS are answered in dp mode only: an exact MIN or MAX "
                                       "discloses one person's value; the auditor reasons over COUNT and SUM answers.")
            if epsilon_given is not None or "delta" in body or "rho" in body:
                raise UnsupportedQuery("A restricted analyst gets exact answers: leave out 'epsilon' (and 'delta', 'rho').")
            if any(f in body for f in BOUND_FIELDS):
                field = next(f for f in BOUND_FIELDS if f in body)
                raise UnsupportedQuery(f"A restricted analyst gets exact answers over every row: leave out {field!r} "
                                       "(a contribution bound of dp mode).")
            check_dimensions(query, self.config.tables[query.table])
            return self._restricted(analyst, query, sql)
        rows = rows_asked(body, self.config.tables[query.table])
        groups = groups_asked(body, query, self.config.tables[query.table], rows, data_keys)
        if any(o.kind == "bounds" for o in query.outputs):
            return self._bounds(analyst, query, sql, body, rows)
        if data_keys:
            return self._data_keys(analyst, query, sql, body, rows)
        if analyst.definition != "pure":
            return self._gaussian(analyst, query, sql, body, rows, groups)
        if "delta" in body or "rho" in body:
            raise UnsupportedQuery("This analyst's budget is pure epsilon-DP (fixed at `analyst add`): send 'epsilon' "
                                   "only, not 'delta' or 'rho'.")
        if epsilon_given is None:
            raise UnsupportedQuery("A dp query needs 'epsilon' (a number > 0): the budget it spends.")
        if isinstance(epsilon_given, bool) or not isinstance(epsilon_given, int | float | str):
            raise UnsupportedQuery("'epsilon' must be a number > 0 (or a string such as \"0.1\" or \"1/3\").")
        epsilon = exact(epsilon_given, "the query", "epsilon")
        table = dp_table(query, joins.query_table(query, self.config))
        plan = noisy.plan(query, table, epsilon, rows, groups)
        cache_key = self._cache_key("dp", query, epsilon, rows, groups)
        stored = self._stored_dp(analyst, sql, cache_key)
        if stored is not None:
            return stored
        charge_id, after = self.state.charge(analyst.name, epsilon, sql, query.ledger_text)
        fast = self.db.fast_cells(query, len(plan.cells), rows, groups)  # the same answer, no scan
        if fast is not None:
            result = noisy.answer_cells(plan, table, *fast, self._rng(charge_id),
                                        self.db.fast_histograms(query, len(plan.cells)))
        else:
            data = self.db.aggregate(aggregate_sql(query, table, "dp", rows=rows, groups=groups))
            hists = {c: self.db.aggregate(histogram_sql(query, table, c, rows, groups)) for c in quantile_columns(query)}
            result = noisy.answer(plan, table, data, self._rng(charge_id), hists)
        state_bounds(result, table, rows, groups)
        _describe(result, query)
        if self.config.cache:
            self.state.store(analyst.name, cache_key, result)
        return 200, {**result, **_budget_fields(epsilon, after), "cached": False}

    def _data_keys(self, analyst: Analyst, query: Any, sql: str, body: dict[str, Any], rows: int | None) -> Response:
        """A dp GROUP BY with keys taken from the data (an ``approx`` analyst): the keys released by
        thresholding, their aggregates with Gaussian noise (:mod:`sdckit.query.keys`), charged the
        ``(epsilon, delta)`` asked."""
        loss = self._loss(analyst, body)
        table = self.config.tables[query.table]
        plan = keys.plan(query, table, loss["epsilon"], loss["delta"], rows)
        cache_key = self._cache_key("keys", query, tuple(sorted(loss.items())), rows)
        stored = self._stored_dp(analyst, sql, cache_key)
        if stored is not None:
            return stored
        eps, delta, rho = plan.cost
        charge_id, after = self.state.charge(analyst.name, eps, sql, query.ledger_text, delta, rho)
        data = self.db.fast_keys(query, plan.selection.k)  # the same key counts, without a scan
        if data is None:
            data = self.db.aggregate(aggregate_sql(query, table, "dp", persons=True, rows=plan.selection.k))
        result = keys.answer(plan, table, data, self._rng(charge_id))
        result[ROWS_FIELD] = plan.selection.k
        if self.config.cache:
            self.state.store(analyst.name, cache_key, result)
        return 200, {**result, **_budget_fields(eps, after, plan.cost), "cached": False}

    def _bounds(self, analyst: Analyst, query: Any, sql: str, body: dict[str, Any], rows: int | None) -> Response:
        """``SELECT BOUNDS(col)``: clamping bounds found under DP (:mod:`sdckit.query.bounds`), a pure
        epsilon-DP mechanism charged exactly in the analyst's definition."""
        if query.join is not None:
            raise UnsupportedQuery("BOUNDS over a JOIN is not supported: ask BOUNDS(column) of the private table alone.")
        loss = self._loss(analyst, body)
        table = self.config.tables[query.table]
        plan = bounds.plan(query, table, analyst.definition, **loss, rows=rows)
        cache_key = self._cache_key("bounds:" + analyst.definition, query, tuple(sorted(loss.items())), rows)
        stored = self._stored_dp(analyst, sql, cache_key)
        if stored is not None:
            return stored
        eps, delta, rho = plan.cost
        charge_id, after = self.state.charge(analyst.name, eps, sql, query.ledger_text, delta, rho)
        data = self.db.fast_bounds(query, plan.k)  # the same bin counts, without a scan
        if data is None:
            data = self.db.aggregate(magnitude_histogram_sql(query, table, plan.column, bounds.LOWEST, bounds.HIGHEST,
                                                             plan.k))
        result = bounds.answer(plan, data, self._rng(charge_id))
        result[ROWS_FIELD] = plan.k
        if self.config.cache:
            self.state.store(analyst.name, cache_key, result)
        return 200, {**result, **_budget_fields(eps, after, plan.cost), "cached": False}

    @staticmethod
    def _loss(analyst: Analyst, body: dict[str, Any]) -> dict[str, Fraction]:
        """The privacy loss a query of an (epsilon, delta)-DP or rho-zCDP analyst sends, exact; a
        400 for a field of another definition, a missing one or one that is not a number."""
        wanted = _LOSS_FIELDS[analyst.definition]
        other = sorted({"epsilon", "delta", "rho"} - set(wanted) & set(body))
        missing = [f for f in wanted if f not in body]
        if other or missing:
            raise UnsupportedQuery(f"This analyst's budget is {DEFINITIONS[analyst.definition]} (fixed at `analyst add`): "
                                   f"send {' and '.join(repr(f) for f in wanted)}"
                                   + (f", not {other[0]!r}." if other else "."))
        for f in wanted:
            if isinstance(body[f], bool) or not isinstance(body[f], int | float | str):
                raise UnsupportedQuery(f"{f!r} must be a number (or a string such as \"0.1\" or \"1/3\").")
        if analyst.definition == "zcdp":
            return {"rho": exact(body["rho"], "the query", "rho")}
        if analyst.definition == "pure":
            return {"epsilon": exact(body["epsilon"], "the query", "epsilon")}
        return {"epsilon": exact(body["epsilon"], "the query", "epsilon"),
                "delta": exact(body["delta"], "the query", "delta", below_one=True)}

    def _gaussian(self, analyst: Analyst, query: Any, sql: str, body: dict[str, Any], rows: int | None,
                  groups: Any = None) -> Response:
        """A dp query of an analyst whose budget is (epsilon, delta)-DP or rho-zCDP: Gaussian noise
        (:mod:`sdckit.query.noisy_gaussian`), charged in that definition."""
        loss = self._loss(analyst, body)
        table = dp_table(query, joins.query_table(query, self.config))
        plan = noisy_gaussian.plan(query, table, analyst.definition, **loss, rows=rows, groups=groups)
        cache_key = self._cache_key(analyst.definition, query, tuple(sorted(loss.items())), rows, groups)
        stored = self._stored_dp(analyst, sql, cache_key)
        if stored is not None:
            return stored
        eps, delta, rho = plan.cost
        charge_id, after = self.state.charge(analyst.name, eps, sql, query.ledger_text, delta, rho)
        fast = self.db.fast_cells(query, len(plan.cells), rows, groups)
        if fast is None:
            data = self.db.aggregate(aggregate_sql(query, table, "dp", rows=rows, groups=groups))
            fast = noisy.exact_cells(plan, table, data)
            hists = {c: self.db.aggregate(histogram_sql(query, table, c, rows, groups)) for c in quantile_columns(query)}
        else:  # the cube's histograms, as a pure analyst's
            hists = self.db.fast_histograms(query, len(plan.cells))
        result = noisy_gaussian.answer_cells(plan, *fast, self._rng(charge_id), table, hists)
        state_bounds(result, table, rows, groups)
        _describe(result, query)
        if self.config.cache:
            self.state.store(analyst.name, cache_key, result)
        return 200, {**result, **_budget_fields(eps, after, plan.cost), "cached": False}

    def _stored_dp(self, analyst: Analyst, sql: str, cache_key: str) -> Response | None:
        """The stored answer of the same dp query (cache on), charged nothing, with the analyst's
        budget as it is now; ``None`` when there is none."""
        if not self.config.cache:
            return None
        stored = self.state.cached(analyst.name, cache_key)
        if stored is None:
            return None
        current = self.state.analyst(analyst.name)
        self.state.log(analyst.name, sql, "answered from cache", 200)
        return 200, {**stored, **_budget_fields(Fraction(0), current), "cached": True}

    def _restricted(self, analyst: Analyst, query: Any, sql: str) -> Response:
        cache_key = self._cache_key("restricted", query, None)
        if self.config.cache:
            stored = self.state.cached(analyst.name, cache_key)
            if stored is not None:
                self.state.log(analyst.name, sql, "answered from cache", 200)
                return 200, {**stored, "epsilon_spent": 0.0, "epsilon_remaining": None, "cached": True}
        result = self.restricted.answer(analyst.name, query, sql)
        if self.config.cache:
            self.state.store(analyst.name, cache_key, result)
        return 200, {**result, "epsilon_spent": 0.0, "epsilon_remaining": None, "cached": False}

    # ------------------------------------------------------------------ table mode
    def table(self, key: str | None, body: Any) -> Response:
        """``POST /v1/table``: a table of counts perturbed by the cell key method
        (:mod:`sdckit.query.tables`); no budget; logged like every request."""
        text = json.dumps(body, sort_keys=True)[:10_000] if isinstance(body, dict) else None
        analyst = self.authenticate(key)
        if analyst is None:
            self.state.log(None, text, "refused: authentication (table)", 401)
            return _error(401, UNAUTHORIZED)
        status, result = self._answer(analyst, text, lambda: self._table(analyst, body), "refused: bad table request",
                                      "table failed", TABLE_FAILED)
        if status == 200:
            self.state.log(analyst.name, text, "answered (table)", 200)
        return status, result

    def _table(self, analyst: Analyst, body: Any) -> Response:
        if not isinstance(body, dict):
            raise UnsupportedQuery('The request body must be a JSON object: {"table": ..., "dimensions": [...]}.')
        if not analyst.may_query(table_of(body)):
            raise _not_allowed(analyst, table_of(body))
        _, result = self.tables.answer(body)
        return 200, result

    def _answer(self, analyst: Analyst, text: str | None, work: Callable[[], Response], bad_request: str,
                failed: str, failure: str) -> Response:
        """``work()``, its refusals and failures turned into HTTP answers, each logged: the budget
        (403 with what remains; logged by the charge's own transaction), a refusal (403), bad input
        (400, logged as ``bad_request``), a bug (500 with ``failure``, never the internals; the
        traceback goes to the server's log as ``failed``)."""
        try:
            return work()
        except BudgetExceeded as exc:
            return _budget_refusal(analyst, exc)
        except Refused as exc:
            self.state.log(analyst.name, text, "refused: " + _short(str(exc)), 403)
            return _error(403, str(exc))
        except SdcError as exc:
            self.state.log(analyst.name, text, bad_request, 400, _short(str(exc)))
            return _error(400, str(exc))
        except Exception:  # a bug: keep the log line, never show internals
            log.exception(failed)
            self.state.log(analyst.name, text, "error", 500)
            return _error(500, failure)

    @staticmethod
    def _cache_key(mode: str, query: Any, epsilon: Any, rows: int | None = None, groups: Any = None) -> str:
        """The stored answer's key: the mode, the parsed query, the privacy loss, the rows per
        person and the per-group bounds the query asked (each left out when it asked none, so that
        keys stored before the fields existed still match: such a query uses the configured bound)."""
        fields = {"mode": json.dumps(mode), "query": query.key_text, "epsilon": json.dumps(str(epsilon))}
        if rows is not None:
            fields[ROWS_FIELD] = json.dumps(rows)
        if groups is not None:
            fields["groups"] = json.dumps([groups.groups, groups.rows])
        # = json.dumps({"mode": mode, "query": query.to_dict(), ...}, sort_keys=True), the query's part computed once
        text = "{" + ", ".join(f"{json.dumps(name)}: {fields[name]}" for name in sorted(fields)) + "}"
        return hashlib.sha256(text.encode()).hexdigest()


#: Aggregates answered in dp mode only (with groups of declared domains).
DP_ONLY = ("var", "stddev", "count_distinct")


def _describe(result: dict[str, Any], query: Any) -> None:
    """State the query's binned and derived columns in the answer's mechanism (:mod:`sdckit.query.derived`)."""
    if derived_of(query):
        result["mechanism"] += "; " + describe(query)


def _budget_refusal(analyst: Analyst, exc: BudgetExceeded) -> Response:
    """403 for a charge past the budget, with what remains in the analyst's definition."""
    if exc.remaining_rho is not None:
        return _error(403, str(exc), definition=analyst.definition, rho_remaining=float(exc.remaining_rho),
                      exact={"rho_remaining": exact_text(exc.remaining_rho)})
    extra = {"delta_remaining": float(exc.remaining_delta)} if analyst.definition == "approx" else {}
    return _error(403, str(exc), definition=analyst.definition, epsilon_remaining=float(exc.remaining),
                  exact={"epsilon_remaining": exact_text(exc.remaining)}, **extra)


def _not_allowed(analyst: Analyst, table: str) -> Refused:
    return Refused(f"The analyst {analyst.name!r} may not query table {table!r}; ask the data protector for access.")


def _budget_fields(charged: Fraction, analyst: Analyst,
                   cost: tuple[Fraction, Fraction, Fraction] | None = None) -> dict[str, Any]:
    """What an answer says of the budget, in the analyst's definition: ``definition``, what this
    answer charged (``epsilon_spent``; ``delta_spent``, ``rho_spent``) and what remains."""
    definition = analyst.definition
    out: dict[str, Any] = {"definition": definition, "definition_text": DEFINITIONS[definition]}
    if definition == "zcdp":
        rho = cost[2] if cost else Fraction(0)
        out.update({"epsilon_spent": 0.0, "epsilon_remaining": None, "rho_spent": float(rho),
                    "rho_remaining": float(analyst.rho_remaining),
                    "exact": {"rho_spent": exact_text(rho), "rho_remaining": exact_text(analyst.rho_remaining)}})
        return out
    remaining = analyst.epsilon_remaining
    out.update({"epsilon_spent": float(charged), "epsilon_remaining": float(remaining),
                "exact": {"epsilon_spent": exact_text(charged), "epsilon_remaining": exact_text(remaining)}})
    if definition == "approx":
        delta = cost[1] if cost else Fraction(0)
        out.update({"delta_spent": float(delta), "delta_remaining": float(analyst.delta_remaining)})
        out["exact"].update({"delta_spent": exact_text(delta), "delta_remaining": exact_text(analyst.delta_remaining)})
    return out


def _sql_of(body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("sql"), str):
        return body["sql"][:10_000]
    return None


def _short(text: str) -> str:
    return " ".join(text.split())[:300]

