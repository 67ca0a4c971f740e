"""`MetricsSource` over the aggregation layer: the three metrics APIs, read as upstream's HPA reads them.

* Resource / ContainerResource: `GET /apis/metrics.k8s.io/<v>/namespaces/<ns>/pods?labelSelector=`
  (v1 when served, else v1beta1), usage per pod summed over containers or the named one.
* Pods: `GET /apis/custom.metrics.k8s.io/<v>/namespaces/<ns>/pods/*/<metric>` with `labelSelector`
  and `metricLabelSelector`, `<v>` the discovery-preferred version (v1beta2, v1beta1).
* Object: the described object's kind mapped through discovery to `resource.group`, then
  `.../namespaces/<ns>/<resource.group>/<name>/<metric>`, cluster-scoped kinds included (upstream's
  client never leaves the autoscaler's namespace); a core `Namespace` uses upstream's
  `.../namespaces/<ns>/metrics/<metric>`.
* External: `GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=`.

Every failure becomes a `FetchFailure` with upstream's wording ("unable to fetch metrics from custom
metrics API: <error>", "no metrics returned from resource metrics API", ...); `observe` never
raises. Each request has a timeout; identical concurrent requests (same namespace, query and pod
selector) share one call, so autoscalers syncing in the same tick reach the API server once. A
404 for the custom-metrics version triggers a (rate-limited) re-discovery and one retry.

Non-goals: caching answers across syncs, retries beyond the version re-check, deciding.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from controller.algorithm.spec import FetchFailure, Observation, SourceType
from controller.metrics import wire
from controller.metrics.report import FetchObserver, FetchOutcome, ignore_fetch
from controller.metrics.source import MetricQuery, MetricsSource
from controller.metrics.versions import CUSTOM_METRICS, RESOURCE_METRICS, NoVersion, VersionChooser
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, KubeError, KubeUnavailable, UnknownResource
from kubecommon.kube.resources import ResourceInfo
from kubecommon.singleflight import SingleFlight
from kubecommon.status import qualified_resource

__all__ = ["AggregatedMetricsSource", "KindResolver"]

EXTERNAL_GROUP = "external.metrics.k8s.io"
_Parse = Callable[[Mapping[str, Any]], Observation]


class KindResolver(Protocol):
    """`kubecommon.kube.resources.ResourceResolver.resolve_kind`: kind -> served resource."""

    async def resolve_kind(self, api_version: str, kind: str) -> ResourceInfo: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class _Request:
    group: str
    what: str  # "custom metrics", as in "unable to fetch metrics from custom metrics API"
    path: str
    params: Mapping[str, str]
    resource: str  # for client-go's "(get pods.metrics.k8s.io)" suffix


class AggregatedMetricsSource:
    """Reads metrics through kube-apiserver's aggregation layer with one `KubeClient`."""

    def __init__(self, client: KubeClient, kinds: KindResolver, *, timeout: float = 10.0,
                 observer: FetchObserver = ignore_fetch, version_refresh_seconds: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._kinds = kinds
        self._timeout = timeout
        self._observer = observer
        self._clock = clock
        self._custom = VersionChooser(client, CUSTOM_METRICS, refresh_seconds=version_refresh_seconds,
                                      timeout=timeout, clock=clock)
        self._resource = VersionChooser(client, RESOURCE_METRICS, refresh_seconds=version_refresh_seconds,
                                        timeout=timeout, clock=clock)
        self._flight: SingleFlight[tuple[str, MetricQuery, str], Observation] = SingleFlight()

    @property
    def custom_metrics_version(self) -> str | None:
        """The custom metrics version in use (None before the first call or after a failure)."""
        return self._custom.cached

    async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> Observation:
        key = (namespace, query, pod_selector)
        return await self._flight.do(key, lambda: self._observe(namespace, query, pod_selector))

    async def _observe(self, namespace: str, query: MetricQuery, pod_selector: str) -> Observation:
        kind = query.type
        if kind in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
            return await self._resource_metric(namespace, query, pod_selector)
        if kind is SourceType.PODS:
            return await self._pods_metric(namespace, query, pod_selector)
        if kind is SourceType.OBJECT:
            return await self._object_metric(namespace, query)
        return await self._external_metric(namespace, query)

    async def _resource_metric(self, namespace: str, query: MetricQuery, pod_selector: str) -> Observation:
        container = query.container if query.type is SourceType.CONTAINER_RESOURCE else ""
        what, started = "resource metrics", self._clock()
        try:
            version = await self._resource.version()
        except (NoVersion, KubeError) as err:
            return self._unresolved(RESOURCE_METRICS.group, what, err, str(err), started)
        request = _Request(group=RESOURCE_METRICS.group, what=what, resource="pods",
                           path=f"/apis/{RESOURCE_METRICS.group}/{version}/namespaces/{_seg(namespace)}/pods",
                           params=_params(labelSelector=pod_selector))
        _, result = await self._fetch(request, lambda doc: wire.resource_samples(
            doc, resource=query.name, container=container))
        return result

    async def _pods_metric(self, namespace: str, query: MetricQuery, pod_selector: str) -> Observation:
        params = _params(labelSelector=pod_selector, metricLabelSelector=query.metric_selector)
        tail = f"namespaces/{_seg(namespace)}/pods/*/{_seg(query.name)}"
        return await self._custom_fetch(tail, params, "pods", wire.pod_samples)

    async def _object_metric(self, namespace: str, query: MetricQuery) -> Observation:
        ref = query.described_object
        if ref is None:
            return FetchFailure(message="object metric source has no describedObject")
        params = _params(metricLabelSelector=query.metric_selector)
        api_version = ref.api_version or "v1"
        metric = _seg(query.name)
        if ref.kind == "Namespace" and api_version == "v1":
            tail = f"namespaces/{_seg(namespace)}/metrics/{metric}"
            return await self._custom_fetch(tail, params, "metrics", _exactly_one)
        started = self._clock()
        try:
            info = await self._kinds.resolve_kind(api_version, ref.kind)
        except KubeError as err:
            group = api_version.rpartition("/")[0]
            group_kind = f"{ref.kind}.{group}" if group else ref.kind
            return self._unresolved(CUSTOM_METRICS.group, "custom metrics", err,
                                    f"unable to map kind {group_kind} to resource: {err}", started)
        resource = qualified_resource(info.resource, info.group)
        # Always in the autoscaler's namespace, cluster-scoped kinds too, as upstream asks.
        tail = f"namespaces/{_seg(namespace)}/{_seg(resource)}/{_seg(ref.name)}/{metric}"
        return await self._custom_fetch(tail, params, resource, _exactly_one)

    async def _external_metric(self, namespace: str, query: MetricQuery) -> Observation:
        request = _Request(group=EXTERNAL_GROUP, what="external metrics", resource=query.name,
                           path=f"/apis/{EXTERNAL_GROUP}/v1beta1/namespaces/{_seg(namespace)}/{_seg(query.name)}",
                           params=_params(labelSelector=query.metric_selector))
        _, result = await self._fetch(request, wire.external_samples)
        return result

    async def _custom_fetch(self, tail: str, params: Mapping[str, str], resource: str,
                            parse: _Parse) -> Observation:
        """GET `/apis/custom.metrics.k8s.io/<preferred version>/<tail>`; on a 404, re-check the
        version and retry once if discovery now prefers another one."""
        what, started = "custom metrics", self._clock()
        try:
            version = await self._custom.version()
        except (NoVersion, KubeError) as err:
            return self._unresolved(CUSTOM_METRICS.group, what, err, str(err), started)
        for attempt in range(2):
            request = _Request(group=CUSTOM_METRICS.group, what=what, resource=resource,
                               path=f"/apis/{CUSTOM_METRICS.group}/{version}/{tail}", params=params)
            outcome, result = await self._fetch(request, parse)
            if outcome is not FetchOutcome.NOT_FOUND or attempt:
                break
            changed = await self._custom.recheck_after_not_found(version)
            if changed is None:
                break
            version = changed
        return result

    def _unresolved(self, group: str, what: str, err: Exception, detail: str, started: float) -> FetchFailure:
        """Discovery (API version, kind mapping) failed before the metric request was sent."""
        if isinstance(err, NoVersion | UnknownResource):
            outcome = FetchOutcome.NO_API
        elif isinstance(err, KubeUnavailable):
            outcome = FetchOutcome.UNAVAILABLE
        else:
            outcome = FetchOutcome.API_ERROR
        self._observer(group, outcome, self._clock() - started)
        return FetchFailure(message=f"unable to fetch metrics from {what} API: {detail}")

    async def _fetch(self, request: _Request, parse: _Parse) -> tuple[FetchOutcome, Observation]:
        """One GET, reported to the observer, turned into an observation or a failure."""
        started = self._clock()
        outcome, result = await self._get_and_parse(request, parse)
        self._observer(request.group, outcome, self._clock() - started)
        return outcome, result

    async def _get_and_parse(self, request: _Request, parse: _Parse) -> tuple[FetchOutcome, Observation]:
        prefix = f"unable to fetch metrics from {request.what} API"
        try:
            doc = await self._client.request_json("GET", request.path, params=request.params,
                                                  timeout=self._timeout)
        except KubeAPIError as err:
            text = _status_text(err, qualified_resource(request.resource, request.group))
            return _outcome_for_code(err.code), FetchFailure(message=f"{prefix}: {text}")
        except KubeUnavailable as err:
            if isinstance(err.__cause__, asyncio.TimeoutError):
                text = f"GET {request.path}: no answer within {self._timeout:g}s (timeout)"
                return FetchOutcome.TIMEOUT, FetchFailure(message=f"{prefix}: {text}")
            return FetchOutcome.UNAVAILABLE, FetchFailure(message=f"{prefix}: {err}")
        try:
            return FetchOutcome.SUCCESS, parse(doc)
        except wire.MalformedBody as err:
            return FetchOutcome.MALFORMED, FetchFailure(message=f"{prefix}: {err}")
        except wire.NoMetrics as err:
            return FetchOutcome.NO_METRICS, FetchFailure(message=str(err))


def _exactly_one(doc: Mapping[str, Any]) -> Observation:
    try:
        return wire.object_sample(doc)
    except wire.NoMetrics as err:  # upstream wraps this one like a failed call
        raise wire.NoMetrics(f"unable to fetch metrics from custom metrics API: {err}") from None


def _seg(text: str) -> str:
    """One URL path segment: `/` and other reserved characters escaped, `*` kept."""
    return quote(text, safe="*")


def _params(**values: str) -> dict[str, str]:
    """Query parameters, leaving out empty selectors as client-go does."""
    return {key: value for key, value in values.items() if value}


_OUTCOME_BY_CODE = {401: FetchOutcome.FORBIDDEN, 403: FetchOutcome.FORBIDDEN, 404: FetchOutcome.NOT_FOUND,
                    504: FetchOutcome.TIMEOUT}

# client-go's text for an error answer without a Status body (apimachinery NewGenericServerResponse).
_GENERIC_TEXT = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing the request",
}


def _outcome_for_code(code: int) -> FetchOutcome:
    return _OUTCOME_BY_CODE.get(code, FetchOutcome.API_ERROR)


def _status_text(err: KubeAPIError, resource: str) -> str:
    """The Status message the server sent, or client-go's generic text with `(get <resource>)`."""
    message = err.status.message
    if message and not message.startswith("the server responded with HTTP "):
        return message
    generic = _GENERIC_TEXT.get(err.code, 'an error on the server ("unknown") has prevented the request '
                                          "from succeeding")
    return f"{generic} (get {resource})"


def _conforms(source: AggregatedMetricsSource) -> MetricsSource:
    """Never called: lets mypy check that the class satisfies the port."""
    return source
