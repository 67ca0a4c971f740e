"""Errors the metrics services raise: typed `metav1.Status` errors with upstream wording.

The messages are those of custom-metrics-apiserver `provider/errors.go` and metrics-server, because
users and the HPA print them verbatim (`unable to fetch metrics from custom metrics API: the server
could not find the metric http_requests for pods`). Backend failures are translated here, once, so
Prometheus details (URLs, PromQL, response bodies) never reach a client; they go to the log.

Non-goals: HTTP rendering (the server's middleware turns any `StatusError` into a response).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from kubecommon.kube import errors as kube_errors
from adapter.prometheus import errors as prom_errors
from adapter.rules import query
from kubecommon import status
from kubecommon.selectors import Selector, SelectorError

__all__ = [
    "BadSelector",
    "InvalidRequestPath",
    "MetricNotFound",
    "MetricsUnavailable",
    "ObjectsUnavailable",
    "UnableToFetchMetrics",
    "guarded",
    "is_outage",
    "kube_guarded",
    "query_errors",
    "status_for",
]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class MetricNotFound(status.NotFound):
    """404 without details, exactly as custom-metrics-apiserver builds it."""

    @classmethod
    def for_resource(cls, resource: str, metric: str) -> MetricNotFound:
        return cls(f"the server could not find the metric {metric} for {resource}")

    @classmethod
    def for_object(cls, resource: str, metric: str, name: str,
                   selector: Selector | None = None) -> MetricNotFound:
        if selector is not None and not selector.is_empty():
            return cls(f"the server could not find the metric {metric} for {resource} {name} "
                       f"with selector {selector}")
        return cls(f"the server could not find the metric {metric} for {resource} {name}")


class InvalidRequestPath(status.BadRequest):
    """A path under a metrics group-version that has the wrong shape."""

    def __init__(self, message: str = "invalid request path") -> None:
        super().__init__(message)


class BadSelector(status.BadRequest):
    """`labelSelector`, `metricLabelSelector` or `fieldSelector` does not parse (400, parser text)."""


class MetricsUnavailable(status.ServiceUnavailable):
    """Prometheus is unreachable, timed out or failed (5xx): retrying later can succeed (503)."""

    def __init__(self) -> None:
        super().__init__("unable to fetch metrics: the metrics backend is unavailable")


class ObjectsUnavailable(status.ServiceUnavailable):
    """The object cache for a `*` request cannot be synced (Kubernetes API unreachable)."""

    def __init__(self) -> None:
        super().__init__("unable to list matching resources: the Kubernetes API is unavailable")


class UnableToFetchMetrics(status.InternalError):
    """Prometheus rejected the query or answered garbage: a rule or backend problem (500).
    `problem` (our own words, never Prometheus' text) is added when known."""

    def __init__(self, problem: str = "") -> None:
        cause = f"unable to fetch metrics: {problem}" if problem else "unable to fetch metrics"
        super().__init__(f"Internal error occurred: {cause}", details={"causes": [{"message": cause}]})


async def kube_guarded(call: Awaitable[_T]) -> _T:
    """Await an object-cache call; failures become Statuses through `status_for` (an unknown
    resource passes through: each service decides what a missing resource means for it)."""
    try:
        return await call
    except kube_errors.UnknownResource:
        raise
    except kube_errors.KubeError as err:
        raise status_for(err) from err


async def guarded(call: Awaitable[_T], *, what: str) -> _T:
    """Await a Prometheus call and translate its failures into Status errors (logged once here)."""
    try:
        return await call
    except prom_errors.PrometheusError as err:
        raise status_for(err, what=what) from err


# THE error table: every typed error of a lower layer, the Status a client gets, and why.
# A backend outage (retrying later can succeed) is 503, the client's mistake a 4xx, and anything
# only the operator or a developer can fix (a rule, a permission, a broken backend answer) 500.
# Each row has a test through the HTTP API (tests/unit/adapter/server/test_error_table.py).
def status_for(err: BaseException, *, what: str = "") -> status.StatusError:
    """The Status a client gets for `err` (a known error of a lower layer, or our bug)."""
    if isinstance(err, status.StatusError):
        return err
    if isinstance(err, SelectorError):
        return BadSelector(str(err))
    if isinstance(err, query.QueryError):
        if err.client_error:
            return BadSelector(str(err))
        _log.error("unable to build the query%s: %s", _for(what), err)
        return status.InternalError.wrapping("unable to build the query")
    if isinstance(err, kube_errors.KubeError):
        return _kube_status(err)
    if isinstance(err, prom_errors.PrometheusError):
        return _prometheus_status(err, what)
    _log.error("unhandled error serving a request", exc_info=err)
    return status.InternalError.wrapping("an unexpected error occurred, see the adapter's log")


def _kube_status(err: kube_errors.KubeError) -> status.StatusError:
    if isinstance(err, kube_errors.UnknownResource):
        return status.NotFound.for_path()
    if isinstance(err, kube_errors.KubeUnavailable):
        _log.warning("unable to list matching resources: %s", err)
        return ObjectsUnavailable()
    _log.error("unable to list matching resources: %s", err)  # RBAC, a broken API: ours to fix
    return status.InternalError.wrapping("unable to list matching resources")


def _prometheus_status(err: prom_errors.PrometheusError, what: str) -> status.StatusError:
    if is_outage(err):
        _log.warning("unable to fetch metrics from prometheus%s: %s", _for(what), err)
        return MetricsUnavailable()
    _log.error("unable to fetch metrics from prometheus%s: %s", _for(what), err)
    if isinstance(err, prom_errors.PrometheusBadResponse) and err.problem:
        # Our own words about the answer's shape (never its text, a URL or the query).
        return UnableToFetchMetrics(err.problem)
    return UnableToFetchMetrics()


def _for(what: str) -> str:
    return f" ({what})" if what else ""


def is_outage(err: prom_errors.PrometheusError) -> bool:
    """Unreachable, timed out, overloaded (429) or a 5xx: passing, a retry can succeed. Any other
    4xx (401/403/404), a rejected query or a malformed answer means a configuration, a rule or
    the backend is wrong, and waiting will not fix it."""
    if isinstance(err, prom_errors.PrometheusHTTPError):
        return err.status >= 500 or err.status == 429
    return isinstance(err, (prom_errors.PrometheusUnreachable, prom_errors.PrometheusTimeout))


@contextmanager
def query_errors(resource: str, metric: str, *, unmapped_is_not_found: bool = True) -> Iterator[None]:
    """Translate a failure to render PromQL for a request.

    The request's own mistakes (a `metricLabelSelector` operator PromQL cannot express, a key that
    is not a Prometheus label name, an oversized selection) are 400s. A rule that maps no label to
    the requested resource means the metric does not exist for it (404, as upstream) for custom
    metrics. Anything else is a broken rule: 500, logged with the rule's error, since only the
    operator can fix it.
    """
    try:
        yield
    except query.QueryError as err:
        if err.client_error:
            raise BadSelector(str(err)) from None
        if unmapped_is_not_found and isinstance(err, query.MissingLabelMapping):
            raise MetricNotFound.for_resource(resource, metric) from None
        _log.error("unable to build the query for metric %s for %s: %s", metric, resource, err)
        raise status.InternalError.wrapping(f"unable to build the query for metric {metric}") from err
