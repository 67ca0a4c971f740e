"""What one metrics-API fetch reports to whoever counts them (the controller's own /metrics).

`rest.AggregatedMetricsSource` calls a `FetchObserver` once per request it actually sends (shared
requests count once), with the API group, how it ended and how long it took. The composition
root wires this to Prometheus histograms and counters; this package never imports
prometheus_client.

Non-goals: metric names, buckets, labels beyond these three values.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

__all__ = ["FetchObserver", "FetchOutcome", "ignore_fetch"]


class FetchOutcome(StrEnum):
    SUCCESS = "success"
    NO_METRICS = "no_metrics"  # a valid answer without a usable value (empty list, ...)
    NOT_FOUND = "not_found"  # 404: metric, object or API version not served
    FORBIDDEN = "forbidden"  # 401/403
    API_ERROR = "api_error"  # any other non-2xx Status
    UNAVAILABLE = "unavailable"  # transport failure: refused, reset, TLS, non-JSON 2xx
    TIMEOUT = "timeout"  # the per-call timeout expired
    MALFORMED = "malformed"  # 2xx JSON that is not the documented list
    NO_API = "no_api"  # discovery: group not registered or no known version; kind not mappable


class FetchObserver(Protocol):
    def __call__(self, api_group: str, outcome: FetchOutcome, seconds: float) -> None: ...


def ignore_fetch(api_group: str, outcome: FetchOutcome, seconds: float) -> None:
    """The default observer: reports nothing."""
