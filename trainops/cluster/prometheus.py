"""Instant queries against a cluster's Prometheus (its HTTP API, `GET /api/v1/query`), reached
directly (`http(s)://...`) or through the API server's service proxy with the kubeconfig's
credentials (`/api/v1/namespaces/NS/services/NAME:PORT/proxy`). Every failure is one
`ClusterError` line: no Prometheus configured, not reachable, not answering as Prometheus does.

The response format is Prometheus' documented one (docs/querying/api.md, "Instant queries"):
`{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...},
"value": [<unix time>, "<value as a string>"]}]}}`; errors carry `"status": "error"` and
`"error"`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from trainops.cluster.bounded import Refused, bounded_session
from trainops.cluster.client import DEFAULT_TIMEOUT_SECONDS, Client
from trainops.cluster.errors import ClusterError

QUERY_PATH = "/api/v1/query"


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


class Prometheus:
    """One Prometheus, by URL or service-proxy path."""

    def __init__(
        self, url: str, client: Client | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._client = client

    def _get(self, params: dict[str, str]) -> requests.Response:
        if self.url.startswith(("http://", "https://")):
            session = bounded_session(self.timeout)  # cluster/bounded.py
            get: Callable[[], requests.Response] = lambda: session.get(  # noqa: E731
                self.url + QUERY_PATH, params=params, timeout=self.timeout
            )
            try:
                return get()
            except Refused as err:
                raise ClusterError(f"Prometheus at {self.url}: the answer {err}") from None
            except requests.exceptions.Timeout:
                raise ClusterError(
                    f"Prometheus at {self.url} did not answer within {self.timeout:g}s"
                ) from None
            except requests.exceptions.RequestException as err:
                raise ClusterError(
                    f"cannot reach Prometheus at {self.url}: {type(err).__name__}; check"
                    " `monitoring.prometheusUrl` in the cluster profile (or --prometheus)"
                ) from None
        if self._client is None:
            raise ClusterError(f"{self.url} is a service-proxy path: it needs the cluster")
        return self._client.proxy_get(self.url + QUERY_PATH, params)

    def query(self, promql: str) -> list[Sample]:
        """The instant vector `promql` evaluates to now (NaN values left out)."""
        response = self._get({"query": promql})
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or "status" not in body:
            raise ClusterError(
                f"{self.url} answered HTTP {response.status_code} without Prometheus' JSON:"
                " is it the Prometheus HTTP API (…/api/v1/query)?"
            )
        if body["status"] != "success":
            raise ClusterError(f"Prometheus at {self.url} refused a query: {body.get('error')}")
        data = body.get("data") or {}
        if data.get("resultType") != "vector":
            raise ClusterError(f"Prometheus at {self.url} answered a {data.get('resultType')}")
        out = []
        for item in data.get("result", []):
            value = float(item["value"][1])
            if not math.isnan(value):
                out.append(Sample(dict(item["metric"]), value))
        return out
