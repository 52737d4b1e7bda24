"""A small client of the query service: ``Client(url, key).sql("SELECT ...")`` -> DataFrame,
or the query built from arguments, as Tumult Analytics' ``Session`` reads:
``Client(url, key).count("census", where={"AGE": (18, 64)}, by=["SEX"], epsilon=0.5)``.

It imports httpx only; pandas is imported by :meth:`Client.sql`, which builds the DataFrame
(so that ``sdckit query`` starts without numpy or pandas; issue 28 item 4), and the query
builder (:mod:`sdckit.query.builder`) by the first :meth:`Client.count` and its siblings.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import httpx

from sdckit.core.errors import ParameterError, SdcError

if TYPE_CHECKING:
    import pandas as pd


class QueryError(SdcError):
    """The service refused the request; ``status`` is the HTTP status, ``payload`` its JSON."""

    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(f"the service answered {status}: {payload.get('error', payload)}")
        self.status = status
        self.payload = payload


class ServiceUnreachable(SdcError):
    """No answer from the service's address (not running, wrong URL, network)."""


class Client:
    """Ask the service at ``url`` with the API ``key``.

    Examples
    --------
    >>> with Client("http://127.0.0.1:8000", key) as c:          # doctest: +SKIP
    ...     frame = c.sql("SELECT region, COUNT(*) FROM census GROUP BY region", epsilon=0.1)
    ...     frame.attrs["epsilon_remaining"]

    The answer's metadata (``epsilon_spent``, ``epsilon_remaining``, ``mechanism``,
    ``noise_scale``, ``ci95``, ``dp``, ``cached``) is in ``frame.attrs``.

    Besides raw SQL, :meth:`count`, :meth:`sum`, :meth:`avg`, :meth:`median`,
    :meth:`quantile`, :meth:`var`, :meth:`stddev`, :meth:`count_distinct`, :meth:`min`, :meth:`max`,
    :meth:`bounds` and :meth:`histogram` build the query from arguments (:func:`sdckit.query.builder.select_sql`,
    :func:`~sdckit.query.builder.histogram_sql`)
    and add each noisy value's 95% interval as two columns.
    """

    def __init__(self, url: str, key: str, timeout: float = 60.0) -> None:
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout,
                                  headers={"Authorization": f"Bearer {key.strip()}"})

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _check(self, response: httpx.Response) -> dict[str, Any]:
        try:
            payload = response.json()
        except ValueError:
            payload = {"error": response.text[:200]}
        if response.status_code != 200:
            raise QueryError(response.status_code, payload)
        return payload

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceUnreachable(f"The query service at {self._http.base_url} cannot be reached "
                                     f"({type(exc).__name__}): is `sdckit serve` running there?") from None

    def query(self, sql: str, epsilon: float | str | None = None, delta: float | str | None = None,
              rho: float | str | None = None, *, max_rows_per_unit: int | None = None,
              max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> dict[str, Any]:
        """The raw JSON answer. Send the privacy loss in the analyst's budget definition:
        ``epsilon`` (pure), ``epsilon`` and ``delta`` ((epsilon, delta)-DP) or ``rho`` (zCDP).
        ``max_rows_per_unit`` (dp mode): count at most this many rows per person (the first ones),
        from 1 to the table's configured bound, which it defaults to; the noise scales with it.
        ``max_groups_per_unit``, ``max_rows_per_group`` (dp GROUP BY): at most this many groups per
        person (her first ones) and rows per group (Tumult's ``MaxGroupsPerID``,
        ``MaxRowsPerGroupPerID``); Gaussian noise scales with ``sqrt(groups) * rows``."""
        body: dict[str, Any] = {"sql": sql}
        for name, value in (("epsilon", epsilon), ("delta", delta), ("rho", rho)):
            if value is not None:
                body[name] = value
        for field, value in (("max_rows_per_unit", max_rows_per_unit), ("max_groups_per_unit", max_groups_per_unit),
                             ("max_rows_per_group", max_rows_per_group)):
            if value is not None:
                body[field] = rows_bound(value, "Client.query", field)
        return self._check(self._send("POST", "/v1/query", json=body))

    def sql(self, sql: str, epsilon: float | str | None = None, delta: float | str | None = None,
            rho: float | str | None = None, *, max_rows_per_unit: int | None = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The answer as a DataFrame, its metadata in ``.attrs``; :class:`QueryError` if refused.
        ``max_rows_per_unit``, ``max_groups_per_unit``, ``max_rows_per_group`` as :meth:`query`."""
        import pandas as pd  # only here: the client itself needs no numpy/pandas (issue 28 item 4)

        return _frame(pd, self.query(sql, epsilon, delta, rho, max_rows_per_unit=max_rows_per_unit,
                                     max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group))

    def table(self, table: str, dimensions: list[str], where: dict[str, list[Any]] | None = None,
              measure: str = "count") -> pd.DataFrame:
        """A table served as tables (``POST /v1/table``): one row per cell, each dimension's total
        coded ``"Total"``, and ``count`` the cell's perturbed count (``None`` if suppressed); the
        answer's other fields in ``.attrs``. :class:`QueryError` if refused."""
        body: dict[str, Any] = {"table": table, "dimensions": list(dimensions), "measure": measure}
        if where is not None:
            body["where"] = where
        payload = self._check(self._send("POST", "/v1/table", json=body))
        import pandas as pd  # only here, as in sql()

        return _frame(pd, payload)

    def public(self, table: str) -> pd.DataFrame:
        """A public table, whole (``GET /v1/public/<table>``; no budget): the lookup tables dp
        queries may join (:mod:`sdckit.query.joins`)."""
        from sdckit.query.builder import identifier  # a plain name only, as in the SQL

        identifier(table, "table", "Client.public")
        payload = self._check(self._send("GET", f"/v1/public/{table}"))
        import pandas as pd  # only here, as in sql()

        return _frame(pd, payload)

    def budget(self) -> dict[str, Any]:
        """The budget in its ``definition``: ``epsilon_total``, ``epsilon_spent``, ``epsilon_remaining``
        (and ``delta_*``), or ``rho_total``, ``rho_spent``, ``rho_remaining``."""
        return self._check(self._send("GET", "/v1/budget"))


    # ------------------------------------------------------------ the query builder (issue 32 item 5)
    def count(self, table: str, where: Any = None, by: str | list[str] | None = None, *,
              epsilon: Any = None, delta: Any = None, rho: Any = None,
              name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The number of rows of ``table`` meeting ``where``, per group of ``by``.

        Sends ``SELECT [by...,] COUNT(*) FROM table [WHERE ...] [GROUP BY by...]``
        (:func:`~sdckit.query.builder.select_sql`) and charges the privacy loss given, exactly.

        Parameters
        ----------
        table : str
            A table the service serves.
        where : dict, str or list of these, optional
            The rows counted: a dict maps a column to a value (``=``), a list of values
            (``IN``) or a tuple ``(low, high)`` (``BETWEEN``, ends included; ``None`` for an
            open end); a string is a SQL condition of the service's subset; a list joins them
            with ``AND``. Values are written as literals, never as SQL.
        by : str or list of str, optional
            Group columns, each with a domain declared in the service's configuration: one row
            per combination of their values, empty groups included.
        epsilon, delta, rho : float, str or Fraction, optional
            The privacy loss, in the analyst's budget definition: ``epsilon`` (pure),
            ``epsilon`` and ``delta`` ((epsilon, delta)-DP), or ``rho`` (zCDP), each charged
            exactly (``0.1`` is 1/10; ``"1/3"`` or ``Fraction(1, 3)`` is 1/3). None for a
            restricted analyst (exact answers).
        name : str, optional
            The answer's column; ``count`` by default.
        max_rows_per_unit : int, optional
            Count at most this many rows per person (the first ones in the table's order), from
            1 to the ``max_rows_per_unit`` of the service's configuration (the default); every
            noise scale is proportional to it (Tumult Analytics' ``MaxRowsPerID`` truncation,
            chosen per query). Stated in ``attrs["max_rows_per_unit"]``; dp analysts only.
        max_groups_per_unit, max_rows_per_group : int, optional
            With ``by``: count each person's rows in at most this many groups (her first ones,
            by their first row in the table's order) and at most this many rows per group
            (Tumult's ``MaxGroupsPerID``, ``MaxRowsPerGroupPerID``), each from 1 to the configured
            ``max_rows_per_unit``: L1 sensitivity ``groups * rows``, L2 ``sqrt(groups) * rows``
            (the Gaussian noise of (epsilon, delta) and zCDP budgets). Stated in ``attrs``.
        join : tuple, optional
            ``(other, column, other_column)`` or ``(other, column, other_column, "left")``: join
            ``other`` (a public table, or a private one of the same privacy unit) on
            ``table.column = other.other_column`` (:mod:`sdckit.query.joins`; dp analysts only);
            ``where`` and ``by`` may then name ``other``'s columns. The join and the sensitivity
            it implies are stated in ``attrs["join"]``.

        Returns
        -------
        pandas.DataFrame
            The group columns, the count and, for a noisy answer, ``<name>_low`` and
            ``<name>_high``, its 95% interval; the answer's metadata in ``.attrs`` (as
            :meth:`sql`), with the SQL sent in ``attrs["sql"]``.

        Raises
        ------
        ParameterError
            A name that is not an identifier, an unknown ``where`` form, an empty ``by``, an
            ``epsilon``, ``delta`` or ``rho`` that is not > 0; nothing is sent.
        QueryError
            The service refused the query (unsupported, budget exceeded, audit).

        Notes
        -----
        Tumult Analytics writes the same question as ::

            session.evaluate(QueryBuilder("census").filter("AGE >= 18")
                             .groupby(KeySet.from_dict({"SEX": ["F", "M"]})).count(), PureDPBudget(1))

        Here the session is the service, over HTTP: the groups' keys are the domains declared in
        its configuration (no ``KeySet``), the budget is the analyst's, kept by the service
        exactly, and the loss is a number in its definition rather than a ``PureDPBudget``,
        ``ApproxDPBudget`` or ``RhoZCDPBudget``.

        Examples
        --------
        >>> with Client("http://127.0.0.1:8000", key) as c:          # doctest: +SKIP
        ...     c.count("census", where={"AGE": (18, None)}, by=["SEX"], epsilon=0.5)
        """
        return self._build("count", table, None, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def sum(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
            epsilon: Any = None, delta: Any = None, rho: Any = None,
            name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The sum of ``column`` (clamped to its declared bounds) over the rows meeting ``where``,
        per group of ``by``: ``SELECT [by...,] SUM(column) ...``; ``sum_<column>`` by default.

        The parameters, answer and errors are :meth:`count`'s. Tumult Analytics:
        ``session.evaluate(QueryBuilder("census").sum("INCOME", low=0, high=400000), PureDPBudget(1))``;
        here the bounds are the service's configuration, not the query's.
        """
        return self._build("sum", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def avg(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
            epsilon: Any = None, delta: Any = None, rho: Any = None,
            name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The mean of ``column`` over the rows meeting ``where``, per group of ``by``:
        ``SELECT [by...,] AVG(column) ...``; ``avg_<column>`` by default.

        The parameters, answer and errors are :meth:`count`'s. Tumult Analytics:
        ``session.evaluate(QueryBuilder("census").average("INCOME", low=0, high=400000), PureDPBudget(1))``.
        """
        return self._build("avg", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def var(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
            epsilon: Any = None, delta: Any = None, rho: Any = None,
            name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The population variance of ``column`` (clamped to its declared bounds) over the rows
        meeting ``where``, per group of ``by``: ``SELECT [by...,] VAR_POP(column) ...``;
        ``var_<column>`` by default; dp analysts only.

        The parameters, answer and errors are :meth:`count`'s. Tumult Analytics:
        ``session.evaluate(QueryBuilder("census").variance("INCOME", low=0, high=400000), PureDPBudget(1))``.
        """
        return self._build("var", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def stddev(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
               epsilon: Any = None, delta: Any = None, rho: Any = None,
               name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The population standard deviation of ``column``: ``SELECT [by...,] STDDEV_POP(column)
        ...``; ``stddev_<column>`` by default; as :meth:`var` otherwise. Tumult Analytics:
        ``QueryBuilder("census").stdev("INCOME", low=0, high=400000)``.
        """
        return self._build("stddev", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def count_distinct(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
                       epsilon: Any = None, delta: Any = None, rho: Any = None,
                       name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The number of distinct values of ``column`` over the rows meeting ``where`` (at most
        ``max_rows_per_unit`` rows per person), per group of ``by``: ``SELECT [by...,]
        COUNT(DISTINCT column) ...``; ``count_distinct_<column>`` by default; dp analysts only.
        Tumult Analytics: ``QueryBuilder("census").count_distinct(["INCOME"])``.
        """
        return self._build("count_distinct", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def median(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
               epsilon: Any = None, delta: Any = None, rho: Any = None, name: str | None = None,
               max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The median of ``column``: ``SELECT [by...,] MEDIAN(column) ...``; ``median_<column>``
        by default; any budget definition (a pure epsilon-DP mechanism, charged in the analyst's),
        and no interval columns (the service gives none).

        The parameters and errors are :meth:`count`'s. Tumult Analytics:
        ``session.evaluate(QueryBuilder("census").median("INCOME", low=0, high=400000), PureDPBudget(1))``.
        """
        return self._build("median", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def quantile(self, table: str, column: str, q: float, where: Any = None, by: str | list[str] | None = None, *,
                 epsilon: Any = None, delta: Any = None, rho: Any = None, name: str | None = None,
                 max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The ``q``-quantile of ``column`` (0 < q < 1): ``SELECT [by...,] QUANTILE_CONT(column, q)
        ...``; ``q<q>_<column>`` by default; as :meth:`median` otherwise. Tumult Analytics:
        ``QueryBuilder("census").quantile("INCOME", 0.9, low=0, high=400000)``.
        """
        return self._build("quantile", table, column, where, by, (epsilon, delta, rho), name, q,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def min(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
            epsilon: Any = None, delta: Any = None, rho: Any = None,
            name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """A DP lower clamping bound of ``column``: ``SELECT [by...,] MIN(column) ...``, the quantile 0
        over the public grid of its bounds (at most ``rank_radius95`` records below it with probability
        >= 95%, never outside the bounds); ``min_<column>`` by default; dp analysts only, any budget
        definition. The parameters and errors are :meth:`count`'s. Tumult Analytics:
        ``QueryBuilder("census").min("INCOME", low=0, high=400000)``.
        """
        return self._build("min", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def max(self, table: str, column: str, where: Any = None, by: str | list[str] | None = None, *,
            epsilon: Any = None, delta: Any = None, rho: Any = None,
            name: str | None = None, max_rows_per_unit: int | None = None, join: Any = None,
            max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """A DP upper clamping bound of ``column``: ``SELECT [by...,] MAX(column) ...``, the quantile 1;
        ``max_<column>`` by default; as :meth:`min` otherwise. Tumult Analytics:
        ``QueryBuilder("census").max("INCOME", low=0, high=400000)``.
        """
        return self._build("max", table, column, where, by, (epsilon, delta, rho), name,
                           rows=(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                           join=join)

    def bounds(self, table: str, column: str, where: Any = None, *, epsilon: Any = None, delta: Any = None,
               rho: Any = None, name: str | None = None, max_rows_per_unit: int | None = None) -> pd.DataFrame:
        """Clamping bounds of a numeric ``column`` found under DP, no public bounds needed:
        ``SELECT BOUNDS(column) ...`` (:mod:`sdckit.query.bounds`, a noisy powers-of-2
        histogram); one row, ``<column>_lower_bound`` and ``<column>_upper_bound`` (``name``
        replaces ``<column>``); dp analysts only, any budget definition (``delta`` is not
        spent). The parameters and errors are :meth:`count`'s. Tumult Analytics:
        ``session.evaluate(QueryBuilder("census").get_bounds("INCOME"), PureDPBudget(1))``.
        """
        return self._build("bounds", table, column, where, None, (epsilon, delta, rho), name, rows=max_rows_per_unit)

    def histogram(self, table: str, column: str, edges: list[Any] | None = None, *, bins: int | None = None,
                  range: tuple[Any, Any] | None = None, where: Any = None, epsilon: Any = None, delta: Any = None,
                  rho: Any = None, name: str | None = None, max_rows_per_unit: int | None = None,
                  max_groups_per_unit: int | None = None, max_rows_per_group: int | None = None) -> pd.DataFrame:
        """The noisy histogram of ``column``: one row per bin ``[edges[i], edges[i + 1])`` (the
        last closed), or per one of ``bins`` equal bins of ``range = (low, high)``; ``bin`` its
        lower edge, ``count`` (or ``name``) its noisy count and 95% interval. Every bin is a row,
        an empty one too (the bins follow from the edges, never from the data); a row outside the
        edges counts in none. The SQL is the binned GROUP BY of
        :func:`~sdckit.query.builder.histogram_sql` (in ``attrs["sql"]``); the loss and the
        other parameters are :meth:`count`'s. Tumult Analytics:
        ``QueryBuilder("census").bin_column("AGE", BinningSpec(bin_edges=[0, 18, 65, 120])).groupby(...).count()``.

        Examples
        --------
        >>> with Client("http://127.0.0.1:8000", key) as c:          # doctest: +SKIP
        ...     c.histogram("census", "age", edges=[0, 18, 65, 120], epsilon=0.5)
        """
        from sdckit.query.builder import histogram_sql

        text = histogram_sql(table, column, edges, bins=bins, range=range, where=where, name=name,
                             owner="Client.histogram")
        return self._ask(text, (epsilon, delta, rho), (max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
                         "Client.histogram")

    def _build(self, aggregate: str, table: str, column: str | None, where: Any, by: Any,
               loss: tuple[Any, Any, Any], name: str | None, q: float | None = None,
               rows: Any = None, join: Any = None) -> pd.DataFrame:
        """Check the arguments, send the SQL built from them, add the interval columns."""
        from sdckit.query.builder import select_sql

        owner = f"Client.{aggregate}"
        text = select_sql(table, aggregate, column, q=q, where=where, by=by, name=name, owner=owner, join=join)
        return self._ask(text, loss, rows, owner)

    def _ask(self, text: str, loss: tuple[Any, Any, Any], rows: Any, owner: str) -> pd.DataFrame:
        """Send the SQL a builder wrote with the loss (exact text) and the contribution bounds ``rows``
        (``max_rows_per_unit`` or the triple with ``max_groups_per_unit``, ``max_rows_per_group``),
        add the interval columns."""
        from sdckit.dp.epsilon import exact  # only here: the client starts with httpx alone

        # checked here (a one-line ParameterError, nothing sent) and sent as exact text ("1/3"), so that
        # a Fraction, Decimal or numpy number is charged exactly what it says
        sent = [None if value is None else str(exact(value, owner, field, below_one=field == "delta"))
                for field, value in zip(("epsilon", "delta", "rho"), loss)]
        fields = ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group")
        bounds = {f: None if v is None else rows_bound(v, owner, f)
                  for f, v in zip(fields, rows if isinstance(rows, tuple) else (rows, None, None))}
        frame = self.sql(text, *sent, **bounds)
        frame.attrs["sql"] = text
        return with_intervals(frame)


def rows_bound(value: Any, owner: str, field: str = "max_rows_per_unit") -> int:
    """``value`` if it is an int >= 1 (a contribution bound), else a one-line
    :class:`~sdckit.core.errors.ParameterError` (nothing sent); the service checks the upper end."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ParameterError(f"The {field} of {owner} must be an int >= 1 (at most the table's configured "
                             f"bound); got {value!r:.40}.")
    return int(value)


def _frame(pd: Any, payload: dict[str, Any]) -> pd.DataFrame:
    """The answer's rows as a DataFrame, its other fields in ``.attrs``."""
    frame = pd.DataFrame(payload["rows"], columns=payload["columns"])
    frame.attrs.update({k: v for k, v in payload.items() if k not in ("rows", "columns")})
    return frame


def with_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``<column>_low`` and ``<column>_high`` after each column the answer's
    ``ci95`` gives 95% intervals for (none for an exact answer or a quantile)."""
    intervals = frame.attrs.get("ci95")
    if not intervals:
        return frame
    out = frame.copy()
    out.attrs = dict(frame.attrs)
    position = 0
    for j, label in enumerate(frame.columns):
        position += 1
        cells = [row[j] for row in intervals]
        if all(cell is None for cell in cells):
            continue
        for end, suffix in ((0, "low"), (1, "high")):
            out.insert(position, f"{label}_{suffix}", [None if cell is None else cell[end] for cell in cells])
            position += 1
    return out
