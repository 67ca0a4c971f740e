"""Vector-case parsing and the handlers for the function-level HPA case kinds.

Used by `hack/conformance/controller_runner.py`. Each handler takes a case's `inputs` and returns the
observed values keyed like the case's `expected` block, by calling the pure function in
`controller.algorithm` that reproduces the upstream function the case was taken from. Vector
conventions (the file's `conventions` block): instants are seconds relative to now=0, "zero" is
Go's zero time, null means absent, windows are strict, values are milli-units.

Non-goals: the `controller_reconcile` shell (`controller_reconcile.py`), field
validation (`controller_schema.py`), output. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controller.algorithm import behavior as bh
from controller.algorithm import pods as pd
from controller.algorithm import sources
from controller.algorithm.errors import MetricError
from controller.algorithm.ratio import Tolerances, saturating_sum
from kubecommon.quantity import Quantity

GO_ZERO_TIME = -62135596800.0  # 0001-01-01T00:00:00Z relative to now=0: "far in the past"
NOW = 0.0

Json = dict[str, Any]


class CaseError(Exception):
    """The case asks for something this runner cannot replay (reported as FAIL, never PASS)."""


def t(value: Any) -> float | None:
    """An instant: seconds relative to now, "zero" (Go's zero time) or null (absent)."""
    if value is None:
        return None
    return GO_ZERO_TIME if value == "zero" else float(value)


def milli(obj: Mapping[str, Any], suffix: str) -> dict[str, int]:
    """`cpu_request_milli: 500` -> {"cpu": 500}; null values mean "absent"."""
    out = {}
    for key, value in obj.items():
        m = re.fullmatch(rf"(?:pod_level_)?(\w+?)_{suffix}_milli", key)
        if m and value is not None:
            out[m.group(1)] = int(value)
    return out


def as_float(value: Any) -> float:
    """Plain numbers, or Quantity strings such as "10m" (tolerances are Quantities upstream)."""
    return float(value) if isinstance(value, int | float) else Quantity.parse(str(value)).as_float()


def _restartable(c: Json) -> bool:
    policy = c.get("restart_policy", c.get("restartPolicy"))
    return policy == "Always" or bool(c.get("restartable")) or bool(c.get("restart_policy_always"))


def _inits(p: Json) -> tuple[pd.ContainerInfo, ...]:
    return tuple(pd.ContainerInfo(name=c.get("name") or "", requests=milli(c, "request"),
                                  restartable_init=_restartable(c))
                 for c in p.get("init_containers") or p.get("initContainers") or ())  # fmt: skip


def _containers(p: Json) -> tuple[pd.ContainerInfo, ...]:
    regular = [pd.ContainerInfo(name=c.get("name") or "", requests=milli(c, "request"))
               for c in p.get("containers") or ()]  # fmt: skip
    # Only restartable init containers (sidecars) count towards the summed requests.
    return (*regular, *(c for c in _inits(p) if c.restartable_init))


def pod(p: Json) -> pd.PodInfo:
    ready = p.get("ready_condition")
    pod_level = {k: v for k, v in p.items() if k.startswith("pod_level_")}
    return pd.PodInfo(
        name=p["name"], phase=pd.PodPhase(p.get("phase") or "Running"),
        ready=None if ready is None else pd.ReadyStatus(ready),
        ready_transition=t(p.get("ready_last_transition")), start_time=t(p.get("start_time")),
        deleted=bool(p.get("deletion_timestamp_set")), containers=_containers(p),
        pod_requests=milli(pod_level, "request") or None, init_containers=_inits(p),
    )  # fmt: skip


def pods(i: Json) -> tuple[pd.PodInfo, ...]:
    return tuple(pod(p) for p in i.get("pods") or ())


def _window(m: Json) -> float:
    """The metric window: 60 s when the key is absent (the harness value), 0 when null."""
    if "window_s" not in m:
        return 60.0
    return float(m["window_s"] or 0)


def metric_items(items: list[Json]) -> list[pd.PodMetricsItem]:
    return [
        pd.PodMetricsItem(
            pod=m["pod"], timestamp=t(m.get("timestamp")) or 0.0, window=_window(m),
            containers=tuple(pd.ContainerUsage(name=c.get("name") or "", usage=milli(c, "usage"))
                             for c in m.get("containers") or ()),
        )
        for m in items
    ]  # fmt: skip


def pod_metrics(items: list[Json]) -> dict[str, pd.PodMetric]:
    return {
        m["pod"]: pd.PodMetric(value=int(m["value_milli"]), timestamp=t(m.get("timestamp")) or 0.0,
                               window=_window(m))
        for m in items
    }  # fmt: skip


def readiness(i: Json) -> pd.ReadinessConfig:
    return pd.ReadinessConfig(
        cpu_initialization_period=float(i.get("cpu_initialization_period_s", 120)),
        initial_readiness_delay=float(i.get("initial_readiness_delay_s", 10)),
    )


def _tolerances(i: Json) -> Tolerances:
    tol = i.get("tolerance") or {}
    return Tolerances(scale_down=as_float(tol.get("scale_down", 0.1)), scale_up=as_float(tol.get("scale_up", 0.1)))


def gate(i: Json, name: str) -> bool:
    return bool((i.get("feature_gates") or {}).get(name))


def external_usage(values: Any) -> int:
    """Upstream sums External values and saturates at MaxInt64 instead of wrapping."""
    return saturating_sum([int(v) for v in values or ()])


# ---- one handler per case kind: the observed values, keyed like `expected` ----


def _resource_calc(fn: str, i: Json, current: int, common: Json) -> sources.Proposal:
    res, container = i.get("resource") or "cpu", i.get("container") or ""
    try:  # the metrics client's error, wrapped as the calculator wraps it
        metrics = pd.resource_usage_by_pod(metric_items(i.get("resource_metrics") or []),
                                           resource=res, container=container)  # fmt: skip
    except MetricError as e:
        raise MetricError(f"unable to get metrics for resource {res}: {e}") from None
    target = i["target"]
    if fn == "GetResourceReplicas":
        return sources.resource_utilization(
            current=current, target_utilization=int(target["average_utilization_percent"]),
            metrics=metrics, resource=res, container=container,
            pod_level_requests=gate(i, "PodLevelResources"), **common,
        )  # fmt: skip
    return sources.plain_average(current=current, target=int(target["average_value_milli"]),
                                 metrics=metrics, resource=res, **common)  # fmt: skip


def replica_calculator(i: Json) -> Json:
    fn, target, current, tol = i["function"], i["target"], int(i["current_replicas"]), _tolerances(i)
    listed = pods(i)
    common: Json = {"pods": listed, "tolerances": tol, "now": t(i.get("now")) or NOW, "readiness": readiness(i)}
    if fn in ("GetResourceReplicas", "GetRawResourceReplicas"):
        p = _resource_calc(fn, i, current, common)
    elif fn == "GetMetricReplicas":
        metrics = pod_metrics(i.get("pod_custom_metrics") or [])
        if not metrics:
            raise MetricError("no metrics returned from custom metrics API")
        p = sources.plain_average(current=current, target=int(target["average_value_milli"]),
                                  metrics=metrics, resource="", **common)  # fmt: skip
    elif fn in ("GetObjectMetricReplicas", "GetExternalMetricReplicas"):
        p = sources.value_target(current=current, target=int(target["value_milli"]), usage=_usage(fn, i),
                                 pods=listed, tolerances=tol)  # fmt: skip
    elif fn in ("GetObjectPerPodMetricReplicas", "GetExternalPerPodMetricReplicas"):
        p = sources.per_pod_target(status_replicas=current, target=int(target["average_value_milli"]),
                                   usage=_usage(fn, i), tolerances=tol)  # fmt: skip
    else:
        raise CaseError(f"unknown calculator function {fn!r}")
    out: Json = {"replicas": p.replicas, "timestamp": p.timestamp}
    # Upstream returns one value besides the count (raw average, plain average, total or per-pod
    # average), named rawUtilization or usage by the function; Utilization targets add the percent.
    out |= {"usage_milli": p.usage, "raw_average_milli": p.usage}
    if fn == "GetResourceReplicas":
        out["utilization_percent"] = p.utilization
    return out


def _usage(fn: str, i: Json) -> int:
    if fn.startswith("GetObject"):
        if "object_metric_value_milli" not in i:
            raise CaseError("an Object calculator case without object_metric_value_milli")
        return int(i["object_metric_value_milli"])
    values = i.get("external_metric_values_milli")
    if not values:
        raise MetricError("no metrics returned from external metrics API")
    return external_usage(values)


def group_pods(i: Json) -> Json:
    metrics = pod_metrics([{"pod": k, **v} for k, v in (i.get("metrics") or {}).items()])
    g = pd.group_pods(pods(i), metrics, resource=i.get("resource") or "", now=t(i.get("now")) or NOW,
                      readiness=readiness(i))  # fmt: skip
    return {"ready_pod_count": g.ready_count, "unready_pods": sorted(g.unready),
            "missing_pods": sorted(g.missing), "ignored_pods": sorted(g.ignored)}  # fmt: skip


def calculate_requests(i: Json) -> Json:
    requests = pd.calculate_requests(pods(i), resource=i.get("resource") or "cpu",
                                     container=i.get("container") or "",
                                     pod_level=gate(i, "PodLevelResources"))  # fmt: skip
    return {"requests_milli": requests}


def convert_rules(i: Json) -> Json:
    r = bh.convert_with_rules(current=i["current_replicas"], desired=i["desired_replicas"],
                              min_replicas=i["min_replicas"], max_replicas=i["max_replicas"],
                              scale_up_limit_factor=i.get("scale_up_limit_factor", 2.0),
                              scale_up_limit_minimum=i.get("scale_up_limit_minimum", 4.0))  # fmt: skip
    return {"replicas": r.replicas, "reason": str(r.reason)}


def recs(items: list[Json] | None) -> tuple[bh.Recommendation, ...]:
    return tuple(bh.Recommendation(replicas=r["replicas"], timestamp=NOW - r["age_s"]) for r in items or ())


def events(items: list[Json] | None) -> tuple[bh.ScaleEvent, ...]:
    return tuple(bh.ScaleEvent(replica_change=e["replica_change"], timestamp=NOW - e["age_s"],
                               outdated=bool(e.get("outdated"))) for e in items or ())  # fmt: skip


def history(i: Json) -> bh.ScaleHistory:
    return bh.ScaleHistory(recommendations=recs(i.get("recommendations")),
                           scale_up_events=events(i.get("scale_up_events")),
                           scale_down_events=events(i.get("scale_down_events")))  # fmt: skip


def _stabilized(st: bh.Stabilized) -> Json:
    return {"stabilized_replicas": st.replicas, "recommendations_length_after": len(st.recommendations),
            "recommendation_values_after": [r.replicas for r in st.recommendations]}  # fmt: skip


def legacy_stabilize(i: Json) -> Json:
    return _stabilized(bh.stabilize_legacy(recs(i["recommendations"]),
                                           prenormalized=i["prenormalized_desired_replicas"],
                                           now=NOW, window=i["downscale_stabilization_window_s"]))  # fmt: skip


def rules(r: Json | None) -> bh.ScalingRules | None:
    if r is None:
        return None
    policies = r.get("policies")
    return bh.ScalingRules(
        stabilization_window_seconds=r.get("stabilization_window_s"),
        select_policy=bh.SelectPolicy(r["select_policy"]) if r.get("select_policy") else None,
        policies=None if policies is None else tuple(
            bh.ScalingPolicy(type=bh.PolicyType(p["type"]), value=p["value"], period_seconds=p["period_s"])
            for p in policies),
        tolerance=None if r.get("tolerance") is None else as_float(r["tolerance"]),
    )  # fmt: skip


def _effective(i: Json, direction: str) -> bh.ScalingRules | None:
    """`*_rules_effective` when given, else the rules as given with the API defaults applied."""
    if f"{direction}_rules_effective" in i:
        return rules(i[f"{direction}_rules_effective"])
    given = bh.Behavior(scale_up=rules(i.get("scale_up_rules_as_given")),
                        scale_down=rules(i.get("scale_down_rules_as_given")))  # fmt: skip
    eff = bh.effective_behavior(given, downscale_stabilization=300)  # the window is not used here
    return eff.scale_up if direction == "scale_up" else eff.scale_down


def rate_limit(i: Json) -> Json:
    b = bh.effective_behavior(bh.Behavior(scale_up=_effective(i, "scale_up"), scale_down=_effective(i, "scale_down")),
                              downscale_stabilization=300)  # fills only what a vector left out  # fmt: skip
    r = bh.rate_limit_with_behavior(current=i["current_replicas"], desired=i["desired_replicas"],
                                    min_replicas=i["min_replicas"], max_replicas=i["max_replicas"],
                                    behavior=b, history=history(i), now=NOW)  # fmt: skip
    return {"replicas": r.replicas, "reason": str(r.reason)}


def scale_limit(i: Json) -> Json:
    r = rules(i.get("rules"))
    if r is None:
        raise CaseError("scale_limit_with_rules case without rules")
    if i.get("direction") not in ("up", "down"):
        raise CaseError(f"direction must be 'up' or 'down', got {i.get('direction')!r}")
    fn = bh.scale_up_limit if i["direction"] == "up" else bh.scale_down_limit
    return {"limit_replicas": fn(i["current_replicas"], history(i), r, now=NOW)}


def store_event(i: Json) -> Json:
    """Run as a scale-up (10 -> 10+n) and as a scale-down (10 -> 10-n): both must agree."""
    prev, r = events(i["prev_events"]), rules(i.get("rules"))
    results = []
    for up in (True, False):
        behavior = None
        if i.get("behavior_present"):
            behavior = bh.Behavior(scale_up=r) if up else bh.Behavior(scale_down=r)
        h = bh.ScaleHistory(scale_up_events=prev) if up else bh.ScaleHistory(scale_down_events=prev)
        new = 10 + (1 if up else -1) * i["replica_change"]
        h = bh.record_scale(h, behavior=behavior, previous=10, new=new, now=NOW)
        after = h.scale_up_events if up else h.scale_down_events
        results.append([{"replica_change": e.replica_change, "outdated": e.outdated} for e in after])
    if results[0] != results[1]:
        return {"events_after": f"scale-up {results[0]} != scale-down {results[1]}"}
    return {"replica_change_in_last_60s_before_store": bh.replicas_change_in_period(prev, now=NOW, period=60),
            "events_after": results[0]}  # fmt: skip


def behavior_stabilize(i: Json) -> Json:
    return _stabilized(bh.stabilize_with_behavior(
        recs(i["recommendations"]), prenormalized=i["prenormalized_desired_replicas"],
        current=i["current_replicas"], now=NOW, up_window=i["scale_up_stabilization_window_s"],
        down_window=i["scale_down_stabilization_window_s"],
    ))  # fmt: skip


HANDLERS: dict[str, Callable[[Json], Json]] = {
    "replica_calculator": replica_calculator,
    "group_pods": group_pods,
    "calculate_requests": calculate_requests,
    "convert_desired_replicas_with_rules": convert_rules,
    "stabilize_recommendation_legacy": legacy_stabilize,
    "behavior_rate_limit": rate_limit,
    "scale_limit_with_rules": scale_limit,
    "store_scale_event": store_event,
    "behavior_stabilization": behavior_stabilize,
}
