"""The controller's own Prometheus metrics (what `/metrics` serves, controller.http_server).

Metrics live on a per-process `CollectorRegistry` (never prometheus_client's global one), under
`prom_autoscaler_controller_`, named after upstream's HPA controller metrics with upstream's labels
and buckets, so an HPA dashboard needs only the prefix changed: `reconciliations_total` and
`reconciliation_duration_seconds` carry `action` (scale_up/scale_down/none: the decision's
direction) and `error` (spec/internal/none) next to our `kind` and `result`;
`metric_computation_total{action,error,metric_type}` counts each metric of each sync. Per object,
as `kubectl get hpa` shows them: each metric's value next to its target (`metric_value`,
`metric_target`, in the target's unit: a percentage for Utilization), `min_replicas`/`max_replicas`,
`desired_replicas`, `current_replicas`, and as KEDA per ScaledObject `paused` and
`autoscaler_errors_total{error}`, `prediction_*` (controller.telemetry_prediction) and the scale-to-zero
`idle_seconds` / `scaled_to_zero` (controller.telemetry_zero), on the leader only; a deleted object's series go with
it, also when it is deleted during its sync. client-go's names too: `workqueue_depth`,
`workqueue_adds_total`, `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
`workqueue_retries_total` (name="promautoscaler", client-go's buckets), the stuck-worker gauges
`workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds` (read from
the worker pool at scrape) and, with leader election,
`leader_election_master_status{name=<lease>}`. Plus what upstream lacks: lateness against each
object's due time (KEP-6003's delay: a histogram, and per object `reconciliation_delay_ratio`),
metric fetches by API group and outcome, decisions by outcome and limiting reason, scale and
status writes by result, leader state, queue depth, and for previewed native HPAs our desired
replicas next to the HPA's own `status.desiredReplicas` (ours absent while metrics or /scale
could not be read: no count was decided).
The label children of the few-valued metrics (kind, result, outcome, reason) are looked up once
and kept, since `labels()` costs several times the increment on every sync.

Non-goals: deciding anything, the metrics' sources (callers report through the observe_* methods),
serving them (controller.http_server). No HTTP here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from controller.algorithm import Outcome
from controller.algorithm.conditions import EventReason
from controller.algorithm.spec import MetricStatus, MetricTarget, SourceType, TargetType
from controller.kube.ports import ObjectKey
from controller.metrics.report import FetchOutcome
from controller.report import Result, SyncOutcome, SyncReport, WriteResult
from controller.telemetry_prediction import PredictionGauges
from controller.telemetry_series import ObjectGauge
from controller.telemetry_zero import ZeroGauges

__all__ = ["ControllerTelemetry", "Started"]

_NS = "prom_autoscaler_controller"
# no replica count was decided (metrics or /scale unreadable): the count shown would be a claim
_UNDECIDED = frozenset({Outcome.BLOCKED, Outcome.FAILED_GET_SCALE})
# upstream's `error` label: a spec the user must fix, or a failure of a read or write
_SPEC_EVENTS = frozenset({EventReason.SELECTOR_REQUIRED, EventReason.INVALID_SELECTOR,
                          EventReason.INVALID_METRIC_SOURCE_TYPE})
_INTERNAL_RESULTS = frozenset({Result.BLOCKED, Result.FAILED_GET_SCALE, Result.WRITE_FAILED})
_SOURCE_TYPES = frozenset(str(t) for t in SourceType)
_OBJECT_LABELS = ["kind", "namespace", "name"]
_METRIC_LABELS = [*_OBJECT_LABELS, "metric_index", "metric_name", "metric_type", "target_type"]
_DURATION_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # upstream: 1 ms doubling, 15 buckets
_LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_WORKQUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 4))  # client-go: 10 ns, x10, 12 buckets
_QUEUE_NAME = "promautoscaler"  # client-go's `name` label of our work queue
_FETCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)



class Started(Protocol):
    """A sync a worker took (controller.run.queue's `Due`): which object, how late against its due time."""

    @property
    def key(self) -> ObjectKey: ...

    @property
    def lateness(self) -> float: ...


class ControllerTelemetry:
    def __init__(self, *, lease_name: str | None = None, default_period: float = 15.0) -> None:
        """`lease_name`: the Lease of leader election (client-go's gauge is exported only with one);
        `default_period`: the sync period of autoscalers without their own `syncPeriodSeconds`."""
        self._default_period = default_period
        r = self.registry = CollectorRegistry()
        self.reconciliations = Counter(f"{_NS}_reconciliations", "Syncs by object kind and result, and by upstream's "
                                       "action (scale_up, scale_down, none) and error (spec, internal, none).",
                                       ["kind", "result", "action", "error"], registry=r)  # fmt: skip
        self.duration = Histogram(f"{_NS}_reconciliation_duration_seconds", "Time one sync took.",
                                  ["kind", "action", "error"], buckets=_DURATION_BUCKETS, registry=r)  # fmt: skip
        self.computations = Counter(f"{_NS}_metric_computation", "Metrics computed per sync, by upstream's action, "
                                    "error and spec.metrics[*].type.", ["action", "error", "metric_type"],
                                    registry=r)  # fmt: skip
        self.lateness = Histogram(f"{_NS}_reconciliation_lateness_seconds",
                                  "How long after its due time a sync started.", buckets=_LATENESS_BUCKETS,
                                  registry=r)  # fmt: skip
        self.fetches = Counter(f"{_NS}_metric_fetches", "Metrics API requests by API group and outcome.",
                               ["api_group", "outcome"], registry=r)  # fmt: skip
        self.fetch_duration = Histogram(f"{_NS}_metric_fetch_duration_seconds", "Metrics API request latency.",
                                        ["api_group"], buckets=_FETCH_BUCKETS, registry=r)  # fmt: skip
        self.decisions = Counter(f"{_NS}_decisions", "Decisions by outcome and limiting reason.",
                                 ["outcome", "limiting_reason"], registry=r)  # fmt: skip
        self.scale_writes = Counter(f"{_NS}_scale_writes", "PUTs of /scale by result.", ["result"], registry=r)
        self.status_writes = Counter(f"{_NS}_status_writes", "Status writes by result.", ["result"], registry=r)
        self.invalid_specs = Counter(f"{_NS}_invalid_specs", "Objects whose spec cannot be used.", ["kind"],
                                     registry=r)  # fmt: skip
        self.desired = ObjectGauge(f"{_NS}_desired_replicas", "Replicas the last decision wants.",
                             ["kind", "namespace", "name"], registry=r)  # fmt: skip
        self.current = ObjectGauge(f"{_NS}_current_replicas", "Replicas the target had at the last sync.",
                             ["kind", "namespace", "name"], registry=r)  # fmt: skip
        self.min_replicas = ObjectGauge(f"{_NS}_min_replicas", "spec.minReplicas at the last sync.", _OBJECT_LABELS,
                                  registry=r)  # fmt: skip
        self.max_replicas = ObjectGauge(f"{_NS}_max_replicas", "spec.maxReplicas at the last sync.", _OBJECT_LABELS,
                                  registry=r)  # fmt: skip
        self.metric_value = ObjectGauge(f"{_NS}_metric_value", "Each metric's current value at the last sync, in its "
                                  "target's unit (absent while it cannot be read).", _METRIC_LABELS,
                                  registry=r)  # fmt: skip
        self.metric_target = ObjectGauge(f"{_NS}_metric_target", "Each metric's target (percent for Utilization).",
                                   _METRIC_LABELS, registry=r)  # fmt: skip
        self.paused = ObjectGauge(f"{_NS}_paused", "1 while the autoscaler is paused (spec.paused), else 0.",
                            _OBJECT_LABELS, registry=r)  # fmt: skip
        self.object_errors = Counter(f"{_NS}_autoscaler_errors", "Syncs with an error, per autoscaler and "
                                     "upstream's error label (spec, internal).", [*_OBJECT_LABELS, "error"],
                                     registry=r)  # fmt: skip
        self.delay_ratio = ObjectGauge(f"{_NS}_reconciliation_delay_ratio", "KEP-6003: (period + lateness) / period "
                                 "of the last regular sync (not the first, nor after a spec change or a failure).",
                                 _OBJECT_LABELS, registry=r)  # fmt: skip
        self.hpa_desired = ObjectGauge(f"{_NS}_native_hpa_desired_replicas",
                                 "Previewed native HPAs: the HPA's own status.desiredReplicas (compare with "
                                 "desired_replicas{kind=\"HorizontalPodAutoscaler\"}).",
                                 ["namespace", "name"], registry=r)  # fmt: skip
        self.objects = Gauge(f"{_NS}_num_autoscalers", "Autoscalers in the watch caches.", ["kind"], registry=r)
        self.leader = Gauge(f"{_NS}_leader", "1 while this replica leads (or runs without election).", registry=r)
        self.leader_transitions = Counter(f"{_NS}_leader_transitions", "Times this replica became leader.",
                                          registry=r)  # fmt: skip
        self.queue_depth = Gauge(f"{_NS}_queue_depth", "Autoscalers due and waiting for a worker.", registry=r)
        self.master_status = None if lease_name is None else Gauge(
            "leader_election_master_status", "client-go's name: 1 while this replica leads the Lease, else 0.",
            ["name"], registry=r).labels(lease_name)  # fmt: skip
        self.wq_depth = Gauge("workqueue_depth", "client-go's name: autoscalers due and waiting for a worker.",
                              ["name"], registry=r).labels(_QUEUE_NAME)  # fmt: skip
        self.wq_adds = Counter("workqueue_adds", "client-go's name: keys handed to a worker.", ["name"],
                               registry=r).labels(_QUEUE_NAME)  # fmt: skip
        self.wq_retries = Counter("workqueue_retries", "client-go's name: failed syncs retried sooner.",
                                  ["name"], registry=r).labels(_QUEUE_NAME)  # fmt: skip
        self.wq_unfinished = Gauge("workqueue_unfinished_work_seconds", "client-go's name: seconds the syncs "
                                   "in progress have run so far; growing values mean a stuck sync.", ["name"],
                                   registry=r).labels(_QUEUE_NAME)  # fmt: skip
        self.wq_longest = Gauge("workqueue_longest_running_processor_seconds", "client-go's name: seconds the "
                                "longest sync in progress has run.", ["name"], registry=r).labels(_QUEUE_NAME)
        self.wq_wait = Histogram("workqueue_queue_duration_seconds", "client-go's name: from due to taken by a "
                                 "worker.", ["name"], buckets=_WORKQUEUE_BUCKETS, registry=r).labels(_QUEUE_NAME)
        self.wq_work = Histogram("workqueue_work_duration_seconds", "client-go's name: time one sync took.",
                                 ["name"], buckets=_WORKQUEUE_BUCKETS, registry=r).labels(_QUEUE_NAME)
        self.checkpoints = Counter(f"{_NS}_shutdown_checkpoints", "Histories saved to status at shutdown.",
                                   registry=r)  # fmt: skip
        self.prediction = PredictionGauges(r, _NS)
        self.zero = ZeroGauges(r, _NS)  # idle_seconds, scaled_to_zero (controller.telemetry_zero)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # (id(metric), labels) -> child
        # per object: (desired, current, native HPA desired) last set on the per-object gauges
        self._shown: dict[ObjectKey, tuple[int | None, int, int | None]] = {}
        # per object: the label values and numbers last set on the per-metric gauges and bounds
        self._metrics_shown: dict[ObjectKey, _MetricGauges] = {}
        self._errors: dict[ObjectKey, set[str]] = {}  # per object: the error labels counted
        self._lateness: dict[ObjectKey, float] = {}  # per object in a worker: how late it started
        self._regular: dict[ObjectKey, int] = {}  # per object: the generation whose next sync is a regular one

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        """`metric.labels(*labels)`, kept: only for metrics whose label values are few and never removed."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # --- LoopObserver --------------------------------------------------------------------------
    def observe_sync(self, outcome: SyncOutcome, seconds: float) -> None:
        kind = outcome.key.kind
        action, error = _action(outcome.report), _error(outcome)
        self._child(self.reconciliations, kind, str(outcome.result), action, error).inc()
        self._child(self.duration, kind, action, error).observe(seconds)
        self.wq_work.observe(seconds)
        if outcome.failed:
            self.wq_retries.inc()
        if outcome.scale_write.value != "none":
            self._child(self.scale_writes, str(outcome.scale_write)).inc()
        if outcome.status_write.value != "none":
            self._child(self.status_writes, str(outcome.status_write)).inc()
        if error != "none":
            key = outcome.key
            self.object_errors.labels(kind, key.namespace, key.name, error).inc()
            self._errors.setdefault(key, set()).add(error)
        report = outcome.report
        if report is None:
            if error == "spec":  # an unusable stored spec: its last decision's numbers are not current
                self._forget_numbers(outcome.key)
            return
        d = report.decision
        self._child(self.decisions, str(d.outcome), report.limiting_reason).inc()
        for m in d.trace.metrics:
            metric_error = "internal" if m.proposal is None else "none"
            metric_type = m.type if m.type in _SOURCE_TYPES else "unknown"
            self._child(self.computations, action, "spec" if metric_type == "unknown" else metric_error,
                        metric_type).inc()  # fmt: skip
        key = outcome.key
        self._show_metrics(key, report)
        self.prediction.show(key, report)
        self.zero.show(key, d.zero)
        self._show_delay_ratio(key, report, failed=outcome.failed)
        hpa = report.autoscaler.status.desired_replicas if kind != "PromAutoscaler" else None
        # a preview claims no count it could not decide (None: the series is withdrawn)
        ours = None if hpa is not None and d.outcome in _UNDECIDED else d.desired_replicas
        shown = (ours, d.current_replicas, hpa)
        if self._shown.get(key) == shown:  # the per-object gauges already say so: skip 2-3 locked lookups
            return
        self._shown[key] = shown
        if ours is None:
            _remove(self.desired, kind, key.namespace, key.name)
        else:
            self.desired.labels(kind, key.namespace, key.name).set(ours)
        self.current.labels(kind, key.namespace, key.name).set(d.current_replicas)
        if hpa is not None:
            self.hpa_desired.labels(key.namespace, key.name).set(hpa)

    def observe_invalid_spec(self, key: ObjectKey) -> None:
        self.invalid_specs.labels(key.kind).inc()

    def _show_delay_ratio(self, key: ObjectKey, report: SyncReport, *, failed: bool) -> None:
        lateness = self._lateness.pop(key, None)
        a = report.autoscaler
        if lateness is not None and self._regular.get(key) == a.generation:
            own = key.kind == "PromAutoscaler" and a.spec_json.get("syncPeriodSeconds") is not None
            period = float(a.sync_period_seconds) if own else self._default_period
            self.delay_ratio.labels(key.kind, key.namespace, key.name).set((period + lateness) / period)
        if failed:  # its next sync is a retry, not a period's wait
            self._regular.pop(key, None)
        else:
            self._regular[key] = a.generation

    def _show_metrics(self, key: ObjectKey, report: SyncReport) -> None:
        """Per-metric value and target gauges and the bounds, changed only where they differ."""
        shown = _metric_gauges(key, report)
        old = self._metrics_shown.get(key)
        if old == shown:
            return
        self._metrics_shown[key] = shown
        before = old or _MetricGauges()
        for (gauge, now), (_, was) in zip(self._gauge_series(shown), self._gauge_series(before), strict=True):
            for labels, _ in was:
                if labels not in dict(now):
                    _remove(gauge, *labels)
            for labels, number in now:
                gauge.labels(*labels).set(number)

    def _gauge_series(self, shown: _MetricGauges) -> tuple[tuple[ObjectGauge, Series], ...]:
        return ((self.metric_value, shown.values), (self.metric_target, shown.targets),
                (self.min_replicas, shown.bounds[:1]), (self.max_replicas, shown.bounds[1:2]),
                (self.paused, shown.bounds[2:]))  # fmt: skip

    def forget_object(self, key: ObjectKey) -> None:
        self._forget_numbers(key)
        for error in self._errors.pop(key, ()):
            _remove(self.object_errors, key.kind, key.namespace, key.name, error)

    def _forget_numbers(self, key: ObjectKey) -> None:
        """Every per-object series but the error counts."""
        self._shown.pop(key, None)
        self._lateness.pop(key, None)
        self._regular.pop(key, None)
        self.prediction.forget(key)
        self.zero.forget(key)
        _remove(self.delay_ratio, key.kind, key.namespace, key.name)
        shown = self._metrics_shown.pop(key, None)
        if shown is not None:
            for gauge, series in self._gauge_series(shown):
                for labels, _ in series:
                    _remove(gauge, *labels)
        for gauge in (self.desired, self.current):
            _remove(gauge, key.kind, key.namespace, key.name)
        if key.kind != "PromAutoscaler":
            _remove(self.hpa_desired, key.namespace, key.name)

    def set_object_count(self, kind: str, count: int) -> None:
        self.objects.labels(kind).set(count)

    # --- other reporters -----------------------------------------------------------------------
    def observe_start(self, due: Started) -> None:
        self.lateness.observe(due.lateness)
        self._lateness[due.key] = due.lateness
        self.wq_adds.inc()
        self.wq_wait.observe(due.lateness)

    def observe_fetch(self, api_group: str, outcome: FetchOutcome, seconds: float) -> None:
        self._child(self.fetches, api_group, str(outcome)).inc()
        self._child(self.fetch_duration, api_group).observe(seconds)

    def set_leader(self, leading: bool) -> None:
        """A replica that stops leading drops its per-object series: the new leader shows them."""
        if leading:
            self.leader_transitions.inc()
        else:
            for key in {*self._shown, *self._metrics_shown, *self._regular, *self._errors}:
                self.forget_object(key)
        self.leader.set(1 if leading else 0)
        if self.master_status is not None:
            self.master_status.set(1 if leading else 0)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


Series = tuple[tuple[tuple[str, ...], float], ...]  # (label values, number) per series


@dataclass(frozen=True, slots=True, kw_only=True)
class _MetricGauges:
    values: Series = ()
    targets: Series = ()
    bounds: Series = ()  # (min, max, paused) series


def _metric_gauges(key: ObjectKey, report: SyncReport) -> _MetricGauges:
    obj = (key.kind, key.namespace, key.name)
    spec = report.autoscaler.spec
    statuses = report.decision.status.current_metrics
    values: list[tuple[tuple[str, ...], float]] = []
    targets: list[tuple[tuple[str, ...], float]] = []
    for i, metric in enumerate(spec.metrics):
        target = metric.target
        if target is None or target.type is None:
            continue
        labels = (*obj, str(i), metric.name, metric.type, str(target.type))
        wanted = _in_unit(target, target.type)
        if wanted is not None:
            targets.append((labels, wanted))
        status = statuses[i] if i < len(statuses) and len(statuses) == len(spec.metrics) else None
        current = _in_unit(status, target.type) if status is not None else None
        if current is not None:
            values.append((labels, current))
    paused = 1.0 if report.autoscaler.paused else 0.0
    bounds = ((obj, float(spec.min_replicas)), (obj, float(spec.max_replicas)), (obj, paused))
    return _MetricGauges(values=tuple(values), targets=tuple(targets), bounds=bounds)


def _in_unit(source: MetricTarget | MetricStatus, target_type: TargetType) -> float | None:
    """The number a target of `target_type` compares: a percentage, or milli-units as units."""
    if target_type is TargetType.UTILIZATION:
        return None if source.average_utilization is None else float(source.average_utilization)
    milli = source.value if target_type is TargetType.VALUE else source.average_value
    return None if milli is None else milli / 1000


def _action(report: SyncReport | None) -> str:
    """Upstream's `action`: the direction the decision wants the replicas to go."""
    if report is None:
        return "none"
    d = report.decision
    if d.desired_replicas > d.current_replicas:
        return "scale_up"
    return "scale_down" if d.desired_replicas < d.current_replicas else "none"


def _error(outcome: SyncOutcome) -> str:
    """Upstream's `error`: "spec" for what the user must fix in the autoscaler (an unusable stored
    spec, a selector problem, an unknown metric type, another autoscaler on the target), "internal"
    for reads and writes that failed, else "none"."""
    report = outcome.report
    if outcome.result is Result.CONFLICT or (outcome.result is Result.BLOCKED and report is None):
        return "spec"  # a BLOCKED outcome without a report is Reconciler.sync_invalid's
    if report is not None and any(e.reason in _SPEC_EVENTS for e in report.decision.events):
        return "spec"
    if outcome.result in _INTERNAL_RESULTS or outcome.status_write is WriteResult.ERROR:
        return "internal"
    return "none"


def _remove(gauge: ObjectGauge | Counter, *labels: str) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:
        pass
