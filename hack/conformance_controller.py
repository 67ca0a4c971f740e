"""Conformance runner for the controller: replays `hpa*.json` vector cases against
`controller.algorithm` (called by `python hack/conformance.py controller FILE.json`).

Each case kind maps onto the pure function reproducing the upstream function it was taken from;
`controller_reconcile` cases replay one whole `reconcileAutoscaler()` pass with this module as
the I/O shell (pod listing by selector, the metrics fetch, injected API failures, the `/scale`
write). Vector conventions (the file's `conventions` block): instants are seconds relative to
now=0, "zero" is Go's zero time, windows are strict.

Output: `PASS id`, `FAIL id: expected ... got ...`, `SKIP id: reason`; then
`N passed, N failed, N skipped`; exit 1 if anything failed. An expected field this runner cannot
check is a FAIL, never a silent pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.algorithm import behavior as bh
from controller.algorithm import pods as pd
from controller.algorithm import sources
from controller.algorithm.conditions import Condition, ConditionType, Reason
from controller.algorithm.decision import Decision, Outcome
from controller.algorithm.errors import MetricError
from controller.algorithm.ratio import Tolerances
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, HpaStatus, MetricSpec,
    MetricStatus, MetricTarget, ObjectRef, ObjectSample, Observation, PodSamples, ScaleTarget,
    SelectorProblem, SourceType, SyncInput, TargetType,
)  # fmt: skip
from controller.algorithm.sync import complete, decide, failed_get_scale
from kubecommon.quantity import Quantity
from kubecommon.selectors import SelectorError, parse_selector

# Deliberate deviations from upstream that a vector case encodes: case id -> reason. A listed
# case is reported as SKIP with its reason, never skipped silently. None today: every public case
# reproduces upstream exactly.
DEVIATIONS: dict[str, str] = {}

# Deliberate deviations that no public vector exercises, documented here for reviewers:
NOT_ENCODED_DEVIATIONS: tuple[str, ...] = (
    "Object/External AverageValue with status.replicas == 0: upstream divides by zero (+Inf/NaN "
    "into int64); we treat the ratio as +Inf (never within tolerance) and report the total as "
    "the average.",
    "A zero or negative target (API validation forbids it) is a metric error here instead of a "
    "division by zero.",
    "An autoscaler with no metrics (API defaulting adds cpu 80%) reports "
    "ScalingActive=False/InvalidMetricSourceType; upstream sets an empty condition.",
    "Message wording of the ambiguous-selector condition lists HPAs as namespace/name, and the "
    "object-metric fetch error reads 'unable to get metric M on Kind name: err' (upstream's "
    "format arguments are out of order).",
    "Window boundaries: a sample exactly W seconds old is outside every window (legacy "
    "stabilization included), the convention of the vectors; upstream's legacy path compares "
    "with Before(cutoff), which differs only at the same nanosecond.",
)

GO_ZERO_TIME = -62135596800.0  # 0001-01-01T00:00:00Z relative to now=0: "far in the past"
NOW = 0.0

Json = dict[str, Any]


class _Skip(Exception):
    pass


def _t(value: Any) -> float | None:
    if value is None:
        return None
    return GO_ZERO_TIME if value == "zero" else float(value)


def _milli(obj: Mapping[str, Any], suffix: str) -> dict[str, int]:
    """`cpu_request_milli: 500` -> {"cpu": 500}; null values mean "absent"."""
    out = {}
    for key, value in obj.items():
        m = re.fullmatch(rf"(?:pod_level_)?(\w+?)_{suffix}_milli", key)
        if m and value is not None:
            out[m.group(1)] = int(value)
    return out


def _float(value: Any) -> float:
    """Plain numbers, or Quantity strings such as "10m" (tolerances are Quantities upstream)."""
    return float(value) if isinstance(value, int | float) else Quantity.parse(str(value)).as_float()


def _containers(p: Json) -> tuple[pd.ContainerInfo, ...]:
    regular = [pd.ContainerInfo(name=c["name"], requests=_milli(c, "request")) for c in p.get("containers", ())]
    # Only restartable init containers (sidecars) count towards requests.
    sidecars = [
        pd.ContainerInfo(name=c["name"], requests=_milli(c, "request"), restartable_init=True)
        for c in p.get("init_containers", ())
        if c.get("restart_policy") == "Always" or c.get("restartable") or c.get("restart_policy_always")
    ]
    return (*regular, *sidecars)


def _pod(p: Json) -> pd.PodInfo:
    ready = p.get("ready_condition")
    pod_level = {k: v for k, v in p.items() if k.startswith("pod_level_")}
    return pd.PodInfo(
        name=p["name"], phase=pd.PodPhase(p.get("phase", "Running")),
        ready=None if ready is None else pd.ReadyStatus(ready),
        ready_transition=_t(p.get("ready_last_transition")), start_time=_t(p.get("start_time")),
        deleted=bool(p.get("deletion_timestamp_set")), containers=_containers(p),
        pod_requests=_milli(pod_level, "request") or None,
    )  # fmt: skip


def _pods(i: Json) -> tuple[pd.PodInfo, ...]:
    return tuple(_pod(p) for p in i.get("pods", ()))


def _metric_items(items: list[Json]) -> list[pd.PodMetricsItem]:
    return [
        pd.PodMetricsItem(
            pod=m["pod"], timestamp=_t(m.get("timestamp")) or 0.0, window=float(m.get("window_s", 60)),
            containers=tuple(pd.ContainerUsage(name=c["name"], usage=_milli(c, "usage"))
                             for c in m.get("containers", ())),
        )
        for m in items
    ]  # fmt: skip


def _pod_metrics(items: list[Json]) -> dict[str, pd.PodMetric]:
    return {
        m["pod"]: pd.PodMetric(value=int(m["value_milli"]), timestamp=_t(m.get("timestamp")) or 0.0,
                               window=float(m.get("window_s", 60)))
        for m in items
    }  # fmt: skip


def _readiness(i: Json) -> pd.ReadinessConfig:
    return pd.ReadinessConfig(
        cpu_initialization_period=float(i.get("cpu_initialization_period_s", 120)),
        initial_readiness_delay=float(i.get("initial_readiness_delay_s", 10)),
    )


def _tolerances(i: Json) -> Tolerances:
    t = i.get("tolerance") or {}
    return Tolerances(scale_down=_float(t.get("scale_down", 0.1)), scale_up=_float(t.get("scale_up", 0.1)))


def _gate(i: Json, name: str) -> bool:
    return bool((i.get("feature_gates") or {}).get(name))


# ---- one handler per case kind: the observed values, keyed like `expected` ----


def _replica_calculator(i: Json) -> Json:
    fn, target, current, tol = i["function"], i["target"], int(i["current_replicas"]), _tolerances(i)
    pods = _pods(i)
    common: Json = {"pods": pods, "tolerances": tol, "now": _t(i.get("now")) or NOW, "readiness": _readiness(i)}
    if fn in ("GetResourceReplicas", "GetRawResourceReplicas"):
        res, container = i.get("resource") or "cpu", i.get("container") or ""
        items = _metric_items(i.get("resource_metrics", []))
        metrics = pd.resource_usage_by_pod(items, resource=res, container=container)
        if fn == "GetResourceReplicas":
            p = sources.resource_utilization(
                current=current, target_utilization=int(target["average_utilization_percent"]),
                metrics=metrics, resource=res, container=container,
                pod_level_requests=_gate(i, "PodLevelResources"), **common,
            )  # fmt: skip
            return {"replicas": p.replicas, "utilization_percent": p.utilization,
                    "raw_average_milli": p.usage, "timestamp": p.timestamp}  # fmt: skip
        p = sources.plain_average(current=current, target=int(target["average_value_milli"]),
                                  metrics=metrics, resource=res, **common)  # fmt: skip
    elif fn == "GetMetricReplicas":
        metrics = _pod_metrics(i.get("pod_custom_metrics", []))
        p = sources.plain_average(current=current, target=int(target["average_value_milli"]),
                                  metrics=metrics, resource="", **common)  # fmt: skip
    elif fn in ("GetObjectMetricReplicas", "GetExternalMetricReplicas"):
        p = sources.value_target(current=current, target=int(target["value_milli"]), usage=_usage(fn, i),
                                 pods=pods, tolerances=tol)  # fmt: skip
    elif fn in ("GetObjectPerPodMetricReplicas", "GetExternalPerPodMetricReplicas"):
        p = sources.per_pod_target(status_replicas=current, target=int(target["average_value_milli"]),
                                   usage=_usage(fn, i), tolerances=tol)  # fmt: skip
    else:
        raise _Skip(f"unknown calculator function {fn}")
    return {"replicas": p.replicas, "usage_milli": p.usage, "raw_average_milli": p.usage,
            "timestamp": p.timestamp, "utilization_percent": p.utilization}  # fmt: skip


def _usage(fn: str, i: Json) -> int:
    if fn.startswith("GetObject"):
        return int(i["object_metric_value_milli"])
    return sum(int(v) for v in i["external_metric_values_milli"])


def _group_pods(i: Json) -> Json:
    metrics = _pod_metrics([{"pod": k, **v} for k, v in i.get("metrics", {}).items()])
    g = pd.group_pods(_pods(i), metrics, resource=i.get("resource") or "", now=_t(i.get("now")) or NOW,
                      readiness=_readiness(i))  # fmt: skip
    return {"ready_pod_count": g.ready_count, "unready_pods": sorted(g.unready),
            "missing_pods": sorted(g.missing), "ignored_pods": sorted(g.ignored)}  # fmt: skip


def _calculate_requests(i: Json) -> Json:
    requests = pd.calculate_requests(_pods(i), resource=i.get("resource") or "cpu",
                                     container=i.get("container") or "",
                                     pod_level=_gate(i, "PodLevelResources"))  # fmt: skip
    return {"requests_milli": requests}


def _convert_rules(i: Json) -> Json:
    r = bh.convert_with_rules(current=i["current_replicas"], desired=i["desired_replicas"],
                              min_replicas=i["min_replicas"], max_replicas=i["max_replicas"],
                              scale_up_limit_factor=i.get("scale_up_limit_factor", 2.0),
                              scale_up_limit_minimum=i.get("scale_up_limit_minimum", 4.0))  # fmt: skip
    return {"replicas": r.replicas, "reason": str(r.reason)}


def _recs(items: list[Json] | None) -> tuple[bh.Recommendation, ...]:
    return tuple(bh.Recommendation(replicas=r["replicas"], timestamp=NOW - r["age_s"]) for r in items or ())


def _events(items: list[Json] | None) -> tuple[bh.ScaleEvent, ...]:
    return tuple(bh.ScaleEvent(replica_change=e["replica_change"], timestamp=NOW - e["age_s"],
                               outdated=bool(e.get("outdated"))) for e in items or ())  # fmt: skip


def _history(i: Json) -> bh.ScaleHistory:
    return bh.ScaleHistory(recommendations=_recs(i.get("recommendations")),
                           scale_up_events=_events(i.get("scale_up_events")),
                           scale_down_events=_events(i.get("scale_down_events")))  # fmt: skip


def _legacy_stabilize(i: Json) -> Json:
    st = bh.stabilize_legacy(_recs(i["recommendations"]), prenormalized=i["prenormalized_desired_replicas"],
                             now=NOW, window=i["downscale_stabilization_window_s"])  # fmt: skip
    return {"stabilized_replicas": st.replicas, "recommendations_length_after": len(st.recommendations),
            "recommendation_values_after": [r.replicas for r in st.recommendations]}  # fmt: skip


def _rules(r: Json | None) -> bh.ScalingRules | None:
    if r is None:
        return None
    policies = r.get("policies")
    return bh.ScalingRules(
        stabilization_window_seconds=r.get("stabilization_window_s"),
        select_policy=bh.SelectPolicy(r["select_policy"]) if r.get("select_policy") else None,
        policies=None if policies is None else tuple(
            bh.ScalingPolicy(type=bh.PolicyType(p["type"]), value=p["value"], period_seconds=p["period_s"])
            for p in policies),
        tolerance=None if r.get("tolerance") is None else _float(r["tolerance"]),
    )  # fmt: skip


def _rate_limit(i: Json) -> Json:
    b = bh.Behavior(scale_up=_rules(i["scale_up_rules_effective"]),
                    scale_down=_rules(i["scale_down_rules_effective"]))  # fmt: skip
    r = bh.rate_limit_with_behavior(current=i["current_replicas"], desired=i["desired_replicas"],
                                    min_replicas=i["min_replicas"], max_replicas=i["max_replicas"],
                                    behavior=b, history=_history(i), now=NOW)  # fmt: skip
    return {"replicas": r.replicas, "reason": str(r.reason)}


def _scale_limit(i: Json) -> Json:
    rules = _rules(i["rules"])
    if rules is None:
        raise _Skip("scale_limit_with_rules case without rules")
    fn = bh.scale_up_limit if i["direction"] == "up" else bh.scale_down_limit
    return {"limit_replicas": fn(i["current_replicas"], _history(i), rules, now=NOW)}


def _store_event(i: Json) -> Json:
    """Run as a scale-up (10 -> 10+n) and as a scale-down (10 -> 10-n): both must agree."""
    prev, rules = _events(i["prev_events"]), _rules(i.get("rules"))
    results = []
    for up in (True, False):
        behavior = None
        if i.get("behavior_present"):
            behavior = bh.Behavior(scale_up=rules) if up else bh.Behavior(scale_down=rules)
        h = bh.ScaleHistory(scale_up_events=prev) if up else bh.ScaleHistory(scale_down_events=prev)
        new = 10 + (1 if up else -1) * i["replica_change"]
        h = bh.record_scale(h, behavior=behavior, previous=10, new=new, now=NOW)
        events = h.scale_up_events if up else h.scale_down_events
        results.append([{"replica_change": e.replica_change, "outdated": e.outdated} for e in events])
    if results[0] != results[1]:
        return {"events_after": f"scale-up {results[0]} != scale-down {results[1]}"}
    return {"replica_change_in_last_60s_before_store": bh.replicas_change_in_period(prev, now=NOW, period=60),
            "events_after": results[0]}  # fmt: skip


def _behavior_stabilize(i: Json) -> Json:
    st = bh.stabilize_with_behavior(
        _recs(i["recommendations"]), prenormalized=i["prenormalized_desired_replicas"],
        current=i["current_replicas"], now=NOW, up_window=i["scale_up_stabilization_window_s"],
        down_window=i["scale_down_stabilization_window_s"],
    )  # fmt: skip
    return {"stabilized_replicas": st.replicas, "recommendations_length_after": len(st.recommendations),
            "recommendation_values_after": [r.replicas for r in st.recommendations]}  # fmt: skip


# ---- controller_reconcile: this module plays the I/O shell around decide() ----


def _target(t: Json | None) -> MetricTarget | None:
    if not t:
        return None
    return MetricTarget(type=TargetType(t["type"]), average_utilization=t.get("averageUtilization"),
                        average_value=t.get("averageValue_milli"), value=t.get("value_milli"))  # fmt: skip


def _selector_text(sel: Json | None) -> str:
    """The metric selector as upstream prints it with `%+v` (used in names and messages)."""
    if sel is None:
        return "<nil>"
    labels = ",".join(f"{k}: {v}" for k, v in sorted((sel.get("matchLabels") or {}).items()))
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels},}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{}},}}")  # fmt: skip


def _metric_spec(m: Json) -> MetricSpec:
    t = m["type"]
    body = m.get(t[:1].lower() + t[1:]) or {}
    if t in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        return MetricSpec(type=t, name=body.get("name", ""), container=body.get("container", ""),
                          target=_target(body.get("target")))  # fmt: skip
    metric, ref = body.get("metric") or {}, body.get("describedObject")
    obj = ObjectRef(kind=ref["kind"], name=ref["name"], api_version=ref.get("apiVersion", "")) if ref else None
    return MetricSpec(type=t, name=metric.get("name", ""), target=_target(body.get("target")),
                      selector=_selector_text(metric.get("selector")), described_object=obj)  # fmt: skip


def _observe(spec: MetricSpec, i: Json, failures: Json) -> Observation:
    """What the metrics APIs would answer, with the injected failures."""
    try:
        if spec.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
            if failures.get("resource_metrics_error"):
                return FetchFailure(message="injected resource metrics API error")
            items = _metric_items(i.get("resource_metrics") or [])
            return PodSamples(values=pd.resource_usage_by_pod(items, resource=spec.name, container=spec.container))
        if spec.type in (SourceType.PODS, SourceType.OBJECT):
            if failures.get("custom_metrics_error"):
                return FetchFailure(message="injected custom metrics API error")
            if spec.type == SourceType.PODS:
                return PodSamples(values=_pod_metrics(i.get("pod_custom_metrics") or []))
            return ObjectSample(value=int(i["object_metric_value_milli"]))
        if spec.type == SourceType.EXTERNAL:
            if failures.get("external_metrics_error"):
                return FetchFailure(message="injected external metrics API error")
            return ExternalSamples(values=tuple(int(v) for v in i.get("external_metric_values_milli") or ()))
    except MetricError as e:
        return FetchFailure(message=str(e))
    return FetchFailure(message="unknown metric source type")


def _selection(i: Json, hpa: Json) -> tuple[tuple[pd.PodInfo, ...], SelectorProblem | None]:
    """List pods by `scale.status.selector`; detect the selector problems upstream reports."""
    text = i["scale"].get("status_selector") or ""
    if not text:
        return (), SelectorProblem.missing()
    try:
        selector = parse_selector(text)
    except SelectorError as e:
        return (), SelectorProblem.invalid(str(e))
    raw = [p for p in i.get("pods", ()) if selector.matches(p.get("labels") or {})]
    owners = [f"{hpa.get('namespace')}/{hpa.get('name')}"]
    for other in i.get("other_hpa_selectors") or ():
        theirs = parse_selector(other["selector"])
        if any(theirs.matches(p.get("labels") or {}) for p in raw):
            owners.append(other["hpa"])
    if len(owners) > 1:
        return (), SelectorProblem.ambiguous(text, tuple(owners))
    return tuple(_pod(p) for p in raw), None


def _current_metric(m: Json) -> MetricStatus | None:
    if not m or not m.get("type"):
        return None
    t = m["type"]
    body = m.get(t[:1].lower() + t[1:]) or {}
    cur = body.get("current") or {}
    name = body.get("name") or (body.get("metric") or {}).get("name", "")

    def milli(key: str) -> int | None:
        if cur.get(f"{key}_milli") is not None:
            return int(cur[f"{key}_milli"])
        return None if cur.get(key) is None else Quantity.parse(str(cur[key])).milli_value()

    return MetricStatus(type=SourceType(t), name=name, container=body.get("container", ""), value=milli("value"),
                        average_value=milli("averageValue"),
                        average_utilization=cur.get("averageUtilization"))  # fmt: skip


def _status(s: Json) -> HpaStatus:
    conds = tuple(
        Condition(type=ConditionType(c["type"]), status=c["status"] == "True", reason=Reason(c["reason"]),
                  message=c.get("message", ""), last_transition_time=_t(c.get("lastTransitionTime")))
        for c in s.get("conditions") or ()
    )  # fmt: skip
    return HpaStatus(current_replicas=s.get("currentReplicas", 0), desired_replicas=s.get("desiredReplicas", 0),
                     last_scale_time=_t(s.get("lastScaleTime")), conditions=conds,
                     current_metrics=tuple(_current_metric(m) for m in s.get("currentMetrics") or ()))  # fmt: skip


def _config(i: Json) -> ControllerConfig:
    cc = i.get("controller_config") or {}
    return ControllerConfig(
        tolerance=_float(cc.get("tolerance", 0.1)),
        downscale_stabilization=float(cc.get("downscale_stabilization_s", 300)),
        readiness=_readiness(cc),
        scale_up_limit_factor=float(cc.get("scale_up_limit_factor", 2.0)),
        scale_up_limit_minimum=float(cc.get("scale_up_limit_minimum", 4.0)),
        configurable_tolerance=_gate(i, "HPAConfigurableTolerance"),
        pod_level_resources=_gate(i, "PodLevelResources"),
    )


def _sync(i: Json, hpa: Json, history: bh.ScaleHistory | None, failures: Json) -> Decision:
    behavior = hpa.get("behavior")
    spec = AutoscalerSpec(
        min_replicas=1 if hpa.get("minReplicas") is None else hpa["minReplicas"],
        max_replicas=hpa["maxReplicas"], metrics=tuple(_metric_spec(m) for m in hpa.get("metrics") or ()),
        behavior=None if behavior is None else bh.Behavior(scale_up=_rules(behavior.get("scaleUp")),
                                                           scale_down=_rules(behavior.get("scaleDown"))),
    )  # fmt: skip
    pods, problem = _selection(i, hpa)
    scale = ScaleTarget(spec_replicas=i["scale"]["spec_replicas"], status_replicas=i["scale"]["status_replicas"],
                        selector=i["scale"].get("status_selector") or "")  # fmt: skip
    inp = SyncInput(spec=spec, scale=scale, now=NOW, status=_status(hpa["status"]), pods=pods, history=history,
                    observations=tuple(_observe(m, i, failures) for m in spec.metrics),
                    selector_problem=problem)  # fmt: skip
    d = decide(inp, _config(i))
    if d.write:  # a conflict once is retried by the shell (re-GET, update again); an error is final
        d = complete(d, write_error="injected scale update error" if failures.get("scale_update_error") else None,
                     now=NOW)  # fmt: skip
    return d


def _status_update(d: Decision, given: Json) -> bool:
    """Whether upstream would write status. Vectors may omit condition messages in the input
    status; then messages cannot take part in the comparison."""
    if all("message" in c for c in given.get("conditions") or ()):
        return d.status_changed
    old, new = d.previous_status, d.status
    return (old.current_replicas, old.desired_replicas, old.last_scale_time,
            [(c.type, c.status, c.reason) for c in old.conditions]) != (
        new.current_replicas, new.desired_replicas, new.last_scale_time,
        [(c.type, c.status, c.reason) for c in new.conditions]) or (
        "currentMetrics" in given and old.current_metrics != new.current_metrics)  # fmt: skip


def _reconcile(i: Json) -> Json:
    hpa, failures = i["hpa"], i.get("failures") or {}
    history = None if i.get("recommendations") is None else _history(i)
    if failures.get("scale_get_error"):
        d = failed_get_scale(_status(hpa["status"]), "injected error getting scale", now=NOW, history=history)
    else:
        d = _sync(i, hpa, history, failures)
    status_update = _status_update(d, hpa["status"])
    cpu = next((m.average_utilization for m in d.status.current_metrics
                if m is not None and m.type is SourceType.RESOURCE and m.name == "cpu"), None)  # fmt: skip
    return {
        "status_desired_replicas": d.status.desired_replicas,
        "conditions": [{"type": str(c.type), "status": "True" if c.status else "False", "reason": str(c.reason),
                        "message": c.message} for c in d.status.conditions],
        "events": [e.to_dict() for e in d.events],
        "event_reasons": [str(e.reason) for e in d.events],
        "scale_updated": d.outcome is Outcome.SCALED,
        "scale_updated_to": d.desired_replicas if d.outcome is Outcome.SCALED else None,
        "reconcile_returns_error": d.error is not None
        or bool(failures.get("status_update_error") and status_update),
        "status_update": status_update,
        "status_cpu_current_utilization_percent": cpu,
    }  # fmt: skip


HANDLERS: dict[str, Callable[[Json], Json]] = {
    "replica_calculator": _replica_calculator,
    "group_pods": _group_pods,
    "calculate_requests": _calculate_requests,
    "convert_desired_replicas_with_rules": _convert_rules,
    "stabilize_recommendation_legacy": _legacy_stabilize,
    "behavior_rate_limit": _rate_limit,
    "scale_limit_with_rules": _scale_limit,
    "store_scale_event": _store_event,
    "behavior_stabilization": _behavior_stabilize,
    "controller_reconcile": _reconcile,
}


def _normal(key: str, value: Any) -> Any:
    if key == "timestamp":
        return GO_ZERO_TIME if value in (None, "zero") else _t(value)
    if key.endswith("_pods") and isinstance(value, list):
        return sorted(value)
    return value


def _project(want: Any, got: Any) -> Any:
    """Compare lists of objects on the fields the vector states (e.g. conditions without
    messages, events without messages); everything else must match as a whole."""
    if (isinstance(want, list) and isinstance(got, list) and len(want) == len(got)
            and all(isinstance(w, dict) and isinstance(g, dict) for w, g in zip(want, got))):  # fmt: skip
        return [{k: g.get(k) for k in w} for w, g in zip(want, got)]
    return got


def check(case: Json) -> list[str]:
    """Mismatches for one case (empty: pass). Raises _Skip for an unsupported kind."""
    handler = HANDLERS.get(case["kind"])
    if handler is None:
        raise _Skip(f"unsupported case kind {case['kind']!r}")
    expected: Json = case["expected"]
    try:
        got = handler(case["inputs"])
    except MetricError as e:
        if "error" not in expected:
            return [f"expected {json.dumps(expected)} got error {e}"]
        want = str(expected["error"])
        # Upstream asserts the error *contains* the text; our message may wrap less or more.
        return [] if want in str(e) or str(e) in want else [f"expected error {want!r} got error {str(e)!r}"]
    if "error" in expected:
        return [f"expected error {expected['error']!r} got {json.dumps(got, default=str)}"]
    problems = []
    for key, want in expected.items():
        if key not in got:
            problems.append(f"expected {key}={json.dumps(want)} got <a field this runner does not check>")
        elif _normal(key, want) != _normal(key, _project(want, got[key])):
            problems.append(f"expected {key}={json.dumps(want)} got {json.dumps(got[key], default=str)}")
    return problems


def run(path: Path) -> int:
    cases = json.loads(path.read_text())["cases"]
    passed = failed = skipped = 0
    for case in cases:
        cid = case["id"]
        if cid in DEVIATIONS:
            print(f"SKIP {cid}: deliberate deviation: {DEVIATIONS[cid]}")
            skipped += 1
            continue
        try:
            problems = check(case)
        except _Skip as e:
            print(f"SKIP {cid}: {e}")
            skipped += 1
            continue
        except Exception as e:  # a crash fails that case, not the whole run
            problems = [f"expected {json.dumps(case['expected'])} got {type(e).__name__}: {e}"]
        if problems:
            print(f"FAIL {cid}: " + "; ".join(problems))
            failed += 1
        else:
            print(f"PASS {cid}")
            passed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
