"""custom.metrics.k8s.io: one object's value, or the values of every object a selector picks.

Follows prometheus-adapter's provider semantics (registry lookup keyed by resource, metric and
scope; one instant query; samples matched to objects through the resource's label; objects without
a sample are left out of a `*` answer; a single object without a sample is a 404), with two changes
users asked for:

* objects for `*` come from a watch cache (`ObjectSource`), never a LIST per request;
* large selections do not build a giant `pod=~"a|b|…"` regex: above `large_selection` objects the
  query selects the whole namespace and the result is filtered against the cached object set,
  which yields the identical answer (`services.queries`, shared with resource metrics);
* a NaN, ±Inf or out-of-range value (`services.values`) leaves its object out of a `*` answer
  (counted through `dropped`), and answers a 404 that says why for a single object, instead of
  upstream's clamped or garbage quantity.

Non-goals: HTTP parsing and JSON rendering (handlers and `render_metrics`), PromQL text (only
`adapter.rules.query` builds it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from adapter.discovery.registry import CustomMetricEntry, CustomMetricInfo, Registry
from kubecommon import status
from kubecommon.kube import errors as kube_errors
from kubecommon.kube.objects import ObjectCaches
from adapter.prometheus.api import PrometheusAPI, Sample
from adapter.rules import query
from adapter.rules.query import PromQL
from adapter.rules.resources import NAMESPACES, GroupResource
from adapter.services import errors
from adapter.services.queries import DEFAULT_LARGE_SELECTION, RenderedQueries, names_to_query
from adapter.services.kinds import KindInfo, kind_for, upstream_api_version
from adapter.services.results import MetricValue, MetricValueList
from adapter.services.values import MILLI_LIMIT, DropSink, describe, ignore_drops, unusable
from kubecommon.quantity import milli_of_finite
from kubecommon.selectors import Selector

__all__ = ["CustomMetricRequest", "CustomMetricsService", "samples_by_name"]

_new_tuple = tuple.__new__
_labels_of, _name_of = attrgetter("labels"), attrgetter("name")


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomMetricRequest:
    """One custom-metrics GET, already decoded from the path and query."""

    resource: GroupResource
    metric: str
    #: None for cluster-scoped objects and for the Namespace object itself
    namespace: str | None
    #: None means `*`: every object `label_selector` picks
    name: str | None
    label_selector: Selector = Selector.empty()
    metric_selector: Selector = Selector.empty()

    @classmethod
    def for_namespace(cls, namespace: str, metric: str, metric_selector: Selector) -> CustomMetricRequest:
        """`namespaces/{ns}/metrics/{metric}`: the Namespace object, a cluster-scoped object."""
        return cls(resource=NAMESPACES, metric=metric, namespace=None, name=namespace,
                   metric_selector=metric_selector)


class CustomMetricsService:
    """Answers custom-metrics requests from the registry snapshot, Prometheus and object caches."""

    def __init__(self, *, registry: Callable[[], Registry], prometheus: PrometheusAPI,
                 objects: ObjectCaches, large_selection: int = DEFAULT_LARGE_SELECTION,
                 dropped: DropSink = ignore_drops,
                 missing: Callable[[CustomMetricInfo], Awaitable[CustomMetricEntry | None]] | None = None) -> None:
        self._registry = registry
        self._missing = missing
        self._dropped = dropped
        self._objects = objects
        self._large_selection = large_selection
        self._queries = RenderedQueries(prometheus)

    async def get(self, request: CustomMetricRequest) -> MetricValueList:
        info = CustomMetricInfo(resource=request.resource, metric=request.metric,
                                namespaced=request.namespace is not None)
        entry = self._registry().custom.get(info)
        if entry is None and self._missing is not None:
            # dropped by the last relist: re-checked; unknown: 503 if Prometheus is unreachable
            entry = await errors.guarded(self._missing(info), what=f"custom metric {request.metric}")
        label = entry.rule.label_for(request.resource) if entry is not None else None
        if entry is None or label is None:
            raise errors.MetricNotFound.for_resource(str(request.resource), request.metric)
        if request.name is not None:
            return await self._single(request, entry, label, request.name)
        return await self._selection(request, entry, label)

    async def _single(self, request: CustomMetricRequest, entry: CustomMetricEntry, label: str,
                      name: str) -> MetricValueList:
        samples = await self._query(request, entry, [name])
        sample = samples_by_name(samples, label).get(name)
        if sample is None:
            raise errors.MetricNotFound.for_object(str(request.resource), request.metric, name,
                                                   request.metric_selector)
        reason = unusable(sample.value)
        if reason is not None:
            self._dropped("custom", reason)
            missing = errors.MetricNotFound.for_object(str(request.resource), request.metric, name)
            raise errors.MetricNotFound(f"{missing.message}: {describe(reason)}")
        return _answer(request, kind_for(request.resource), (name,), {name: sample}, self._dropped)

    async def _selection(self, request: CustomMetricRequest, entry: CustomMetricEntry,
                         label: str) -> MetricValueList:
        try:
            reader = await errors.kube_guarded(self._objects.reader(request.resource))
        except kube_errors.UnknownResource as err:
            # the resource left the cluster since start (a CRD deleted): upstream's lister fails
            raise status.InternalError.wrapping("unable to list matching resources") from err
        # The cache answers in (namespace, name) order, the order of a kube LIST, as upstream;
        # names are unique within one namespace (or cluster-wide for cluster-scoped resources).
        names = list(map(_name_of, reader.list(request.namespace, request.label_selector)))
        if not names:
            # prometheus-adapter cannot build a query without names and answers 404
            raise errors.MetricNotFound.for_resource(str(request.resource), request.metric)
        query_names = names_to_query(names, self._large_selection)
        samples = samples_by_name(await self._query(request, entry, query_names), label)
        kind = KindInfo(kind=reader.kind, api_version=upstream_api_version(reader.api_version)) \
            if reader.kind else kind_for(request.resource)
        return _answer(request, kind, names, samples, self._dropped)

    async def _query(self, request: CustomMetricRequest, entry: CustomMetricEntry,
                     names: Sequence[str] | None) -> list[Sample]:
        key = (entry.rule.ref, entry.series_name, request.resource, request.namespace,
               None if names is None else tuple(names), request.metric_selector)

        def render() -> PromQL:
            with errors.query_errors(str(request.resource), request.metric):
                return query.render_custom(
                    entry.rule, series_name=entry.series_name, resource=request.resource,
                    namespace=request.namespace, names=names, metric_selector=request.metric_selector)

        return await self._queries.run(key, render,
                                       what=f"custom metric {request.metric} for {request.resource}")


def _answer(request: CustomMetricRequest, kind: KindInfo, names: Sequence[str],
            samples: Mapping[str, Sample], dropped: DropSink) -> MetricValueList:
    """The values of `names` (in that order) that have a usable sample; the others are left out."""
    # The sample's timestamp is the instant query's evaluation time (prometheus-adapter uses its
    # wall clock at response time: the same moment, give or take the query latency).
    # tuple.__new__ skips the NamedTuple's Python-level __new__: one MetricValue per object
    items: list[MetricValue] = []
    append = items.append
    for name in names:
        sample = samples.get(name)
        if sample is None:
            continue
        value = sample.value
        if -MILLI_LIMIT < value < MILLI_LIMIT:  # False for NaN and ±Inf
            # `milli_from_float(value)` inline (a call per object is a tenth of this loop): in
            # this range value × 1000 stays below 2^63, where it is just the truncated product.
            append(_new_tuple(MetricValue, (name, sample.timestamp, int(value * 1000.0))))
        elif (reason := unusable(value)) is None:  # beyond int64 milli-units: exponent form
            append(_new_tuple(MetricValue, (name, sample.timestamp, milli_of_finite(value))))
        else:
            dropped("custom", reason)
    return MetricValueList(kind=kind.kind, api_version=kind.api_version, namespace=request.namespace,
                           metric=request.metric, selector=request.metric_selector, items=tuple(items))


def samples_by_name(samples: Sequence[Sample], label: str) -> dict[str, Sample]:
    """Samples keyed by the object name in `label`; the last sample wins, as upstream. Samples
    without the label are left out."""
    try:  # the common case, every sample has the label, in C-level passes
        return dict(zip(map(itemgetter(label), map(_labels_of, samples)), samples, strict=True))
    except KeyError:
        return {sample.labels[label]: sample for sample in samples if label in sample.labels}
