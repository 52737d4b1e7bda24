"""A small client of the query service: ``Client(url, key).sql("SELECT ...")`` -> DataFrame.

It imports httpx only; pandas is imported by :meth:`Client.sql`, which builds the DataFrame
(so that ``sdckit query`` starts without numpy or pandas; issue 28 item 4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from sdckit.core.errors import SdcError

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
              rho: float | str | None = None) -> dict[str, Any]:
        """The raw JSON answer. Send the privacy loss in the analyst's budget definition:
        ``epsilon`` (pure), ``epsilon`` and ``delta`` ((epsilon, delta)-DP) or ``rho`` (zCDP)."""
        body: dict[str, Any] = {"sql": sql}
        for name, value in (("epsilon", epsilon), ("delta", delta), ("rho", rho)):
            if value is not None:
                body[name] = value
        return self._check(self._send("POST", "/v1/query", json=body))

    def sql(self, sql: str, epsilon: float | str | None = None, delta: float | str | None = None,
            rho: float | str | None = None) -> pd.DataFrame:
        """The answer as a DataFrame, its metadata in ``.attrs``; :class:`QueryError` if refused."""
        import pandas as pd  # only here: the client itself needs no numpy/pandas (issue 28 item 4)

        payload = self.query(sql, epsilon, delta, rho)
        frame = pd.DataFrame(payload["rows"], columns=payload["columns"])
        frame.attrs.update({k: v for k, v in payload.items() if k not in ("rows", "columns")})
        return frame

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

        frame = pd.DataFrame(payload["rows"], columns=payload["columns"])
        frame.attrs.update({k: v for k, v in payload.items() if k not in ("rows", "columns")})
        return frame

    def budget(self) -> dict[str, Any]:
        """The budget in its ``definition``: ``epsilon_total``, ``epsilon_spent``, ``epsilon_remaining``
        (and ``delta_*``), or ``rho_total``, ``rho_spent``, ``rho_remaining``."""
        return self._check(self._send("GET", "/v1/budget"))
