"""The I/O edge of check-config: runs seriesQuery calls with `prometheus-api-client` (synchronous,
fine for a one-shot CLI) and shows what discovery's registry builder makes of the answers.

Non-goals: retries, concurrency, the server's async client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from adapter.discovery.registry import build_registry
from adapter.rules.compile import CompiledConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """How to reach Prometheus (the server's flag names, subset)."""

    url: str
    timeout: float = 30.0
    token_file: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    ca_file: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    insecure: bool = False


def _client(conn: Connection) -> Any:
    import requests
    from prometheus_api_client import PrometheusConnect
    from urllib3.util.retry import Retry

    headers = dict(conn.headers)
    if conn.token_file:
        headers["Authorization"] = f"Bearer {Path(conn.token_file).read_text().strip()}"
    session = requests.Session()
    session.verify = False if conn.insecure else (conn.ca_file or True)
    if conn.client_cert_file and conn.client_key_file:
        session.cert = (conn.client_cert_file, conn.client_key_file)
    return PrometheusConnect(url=conn.url.rstrip("/"), headers=headers or None, session=session,
                             retry=Retry(total=0), timeout=int(max(conn.timeout, 1)))


def fetch_series(
    conn: Connection, queries: Sequence[str], *, end: float, max_age: float,
) -> tuple[dict[str, list[dict[str, str]]], dict[str, str]]:
    """One /api/v1/series call per distinct query: (series by query, error text by query)."""
    client = _client(conn)
    start_dt = datetime.fromtimestamp(max(0.0, end - max_age), tz=timezone.utc)  # --metrics-max-age 1e12
    end_dt = datetime.fromtimestamp(end, tz=timezone.utc)
    found: dict[str, list[dict[str, str]]] = {}
    failed: dict[str, str] = {}
    try:
        for series_query in queries:
            try:
                found[series_query] = client.get_series(start_dt, end_dt, params={"match[]": series_query})
            except Exception as err:  # noqa: BLE001 - any failure is reported per query, not raised
                failed[series_query] = _short(err)
    finally:
        client.close()
    return found, failed


def _short(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text[:300]}"


def registry_lines(compiled: CompiledConfig, series_by_query: Mapping[str, Sequence[Mapping[str, str]]]) -> list[str]:
    """The adapter's discovery result (later rules overwrite earlier ones for the same key)."""
    registry = build_registry(compiled, series_by_query)
    lines = ["", "After discovery the adapter would serve:"]
    for info in registry.custom_metrics():
        scope = "namespaced" if info.namespaced else "cluster-scoped"
        lines.append(f"  custom.metrics.k8s.io {info.resource}/{info.metric} ({scope})")
    for external in registry.external_metrics():
        lines.append(f"  external.metrics.k8s.io {external.metric}")
    if len(lines) == 2:
        lines.append("  nothing")
    return lines
