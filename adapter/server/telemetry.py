"""The adapter's own Prometheus metrics, on a per-app `CollectorRegistry` (never the global one).

Exposed at `/metrics`:
- `prom_autoscaler_adapter_requests_total{group,version,verb,code}` and
  `prom_autoscaler_adapter_request_duration_seconds{group,verb,code}`: every API request;
- `prom_autoscaler_adapter_prometheus_request_duration_seconds{call}` and
  `prom_autoscaler_adapter_prometheus_request_errors_total{call,error}`: calls to Prometheus
  (reported by `adapter.prometheus.instrumented.InstrumentedPrometheus`, which wraps the client);
- `prom_autoscaler_adapter_dropped_samples_total{api,reason}`: samples left out of an answer
  because their value cannot be served (NaN, inf, out of a quantity's range);
- `prom_autoscaler_adapter_served_sample_age_seconds`: age of the newest sample in each
  Prometheus answer used to serve a request (instant queries are stamped with their evaluation
  time, so this shows evaluation lag, e.g. of a remote or federated backend, like
  prometheus-adapter's metric freshness histogram does);
- state read at scrape time through callbacks: relist duration/failures/suspect empty answers/
  last success, whether the served registry is stale (`registry_stale`) and its age
  (`registry_age_seconds`), registry size (custom/external metrics, series), watch-cache sizes,
  the rule file in force (`rule_file_info{sha256}`) and its live reloads
  (`rule_file_last_reload_success`, `..._timestamp_seconds`, `rule_file_reloads_total{result}`).

Non-goals: exposition of the Python process collectors (they read /proc at construction, which
style practice 12 forbids in constructors; the scrape target's own exporter covers them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from adapter.discovery.reload import ReloadState
from adapter.prometheus.api import Sample
from adapter.prometheus.instrumented import CallObserver

__all__ = ["StateSource", "Telemetry"]

_NS = "prom_autoscaler_adapter"
_timestamp_of = attrgetter("timestamp")
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class StateSource:
    """Callbacks read at scrape time; each returns plain numbers (None = unknown yet)."""

    relist: Callable[[], Mapping[str, float | None]] = field(default=lambda: {})
    registry: Callable[[], Mapping[str, float]] = field(default=lambda: {})
    caches: Callable[[], Mapping[str, int]] = field(default=lambda: {})
    #: the rule file in force and the last live reload
    rules: Callable[[], ReloadState] | None = None


class _StateCollector(Collector):
    def __init__(self, source: StateSource) -> None:
        self._source = source

    def collect(self) -> Iterable[Metric]:
        relist = self._source.relist()
        for key, help_text in (
            ("relist_last_duration_seconds", "Duration of the last series discovery relist."),
            ("relist_last_success_timestamp_seconds", "Unix time of the last successful relist."),
            ("registry_stale", "1 while the last relist failed and an older registry is served."),
            ("registry_age_seconds", "Age of the served metric registry (since its relist)."),
        ):
            value = relist.get(key.removeprefix("relist_"))
            if value is not None:
                yield GaugeMetricFamily(f"{_NS}_{key}", help_text, value=float(value))
        for key, name, help_text in (
            ("failures_total", "relist_failures", "Relists that failed since start."),
            ("suspect_total", "relist_suspect_empty",
             "Relists refused because series vanished while Prometheus was not ready or too young."),
            ("invalid_total", "relist_invalid_answers",
             "Relists refused whole because a series answer failed validation (the last good registry is kept)."),
            ("rechecks_total", "registry_rechecks",
             "Series queries re-run for a metric the last relist dropped, on request."),
        ):
            value = relist.get(key)
            if value is not None:
                yield CounterMetricFamily(f"{_NS}_{name}", help_text, value=float(value))
        registry = GaugeMetricFamily(f"{_NS}_registry_size", "Entries in the metric registry snapshot.",
                                     labels=["kind"])
        for kind, value in sorted(self._source.registry().items()):
            registry.add_metric([kind], float(value))
        yield registry
        caches = GaugeMetricFamily(f"{_NS}_watch_cache_objects", "Objects held per watch cache.",
                                   labels=["resource"])
        for resource, value in sorted(self._source.caches().items()):
            caches.add_metric([resource], float(value))
        yield caches
        if self._source.rules is not None:
            yield from _rule_file_metrics(self._source.rules())


def _rule_file_metrics(state: ReloadState) -> Iterable[Metric]:
    """The loaded rule file's hash and the last live reload's outcome."""
    loaded = GaugeMetricFamily(f"{_NS}_rule_file_info", "The rule file in force (label: its SHA-256).",
                               labels=["sha256"])
    loaded.add_metric([state.sha256], 1.0)
    yield loaded
    if state.last_result:
        yield GaugeMetricFamily(f"{_NS}_rule_file_last_reload_success",
                                "1 if the last changed rule file was loaded, 0 if it was refused.",
                                value=1.0 if state.last_result == "success" else 0.0)
        yield GaugeMetricFamily(f"{_NS}_rule_file_last_reload_timestamp_seconds",
                                "Unix time of the last reload attempt.", value=float(state.last_time or 0.0))
    reloads = CounterMetricFamily(f"{_NS}_rule_file_reloads", "Changed rule files seen, by result.",
                                  labels=["result"])
    reloads.add_metric(["success"], float(state.successes))
    reloads.add_metric(["failure"], float(state.failures))
    yield reloads


class Telemetry:
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.registry = CollectorRegistry()
        self._clock = clock
        self._request_children: dict[tuple[str, str, str, int], tuple[Any, Any]] = {}
        self._call_durations: dict[str, Any] = {}  # `prometheus_duration` by call (query, series, health)
        self.requests = Counter(f"{_NS}_requests", "API requests served, by API group, version, verb "
                                "and HTTP code.", ["group", "version", "verb", "code"], registry=self.registry)
        self.request_duration = Histogram(f"{_NS}_request_duration_seconds", "API request latency by API "
                                          "group, verb and HTTP code.", ["group", "verb", "code"],
                                          buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.prometheus_duration = Histogram(f"{_NS}_prometheus_request_duration_seconds",
                                             "Latency of calls to Prometheus.", ["call"],
                                             buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.prometheus_errors = Counter(f"{_NS}_prometheus_request_errors", "Failed calls to Prometheus.",
                                         ["call", "error"], registry=self.registry)
        self.dropped_samples = Counter(f"{_NS}_dropped_samples", "Prometheus samples left out of an "
                                       "answer because their value cannot be served (NaN, inf, out of "
                                       "a quantity's range), by API.", ["api", "reason"],
                                       registry=self.registry)
        self.sample_age = Histogram(f"{_NS}_served_sample_age_seconds",
                                    "Age of the newest sample in each Prometheus answer used to serve a "
                                    "request.", buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800),
                                    registry=self.registry)

    def add_state(self, source: StateSource) -> None:
        self.registry.register(_StateCollector(source))

    def observe_request(self, *, group: str, version: str, verb: str, code: int, seconds: float) -> None:
        key = (group, version, verb, code)
        children = self._request_children.get(key)
        if children is None:
            # Label values are already bounded by the caller, so is this map; `labels()` costs a
            # lock and a tuple validation on every call, which the hot path does not need to pay.
            children = self._request_children[key] = (
                self.requests.labels(group, version, verb, str(code)),
                self.request_duration.labels(group, verb, str(code)))
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def observe_prometheus_call(self, call: str, seconds: float) -> None:
        """One call to Prometheus (`adapter.prometheus.instrumented`) and how long it took."""
        histogram = self._call_durations.get(call)
        if histogram is None:  # a few call names, fixed in the code
            histogram = self._call_durations[call] = self.prometheus_duration.labels(call)
        histogram.observe(seconds)

    def count_prometheus_error(self, call: str, error: str) -> None:
        """One failed call to Prometheus, by the error's type name."""
        self.prometheus_errors.labels(call, error).inc()

    def drop_sample(self, api: str, reason: str) -> None:
        """A `services.values.DropSink`: one sample left out of an answer, and why."""
        self.dropped_samples.labels(api, reason).inc()

    def observe_samples(self, samples: Sequence[Sample]) -> None:
        if samples:
            newest = max(map(_timestamp_of, samples))
            if newest == newest:  # a NaN time (a garbled answer) is not an age
                self.sample_age.observe(max(0.0, self._clock() - newest))


def _observes(telemetry: Telemetry) -> CallObserver:
    """Never called: lets mypy check `Telemetry` against the instrumented wrapper's observer."""
    return telemetry
