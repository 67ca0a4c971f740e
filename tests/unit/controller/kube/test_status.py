"""Status JSON built from real decisions, and the write rule that keeps status writes rare."""

import json

import pytest

from controller.algorithm import ControllerConfig, SyncInput, complete, decide, failed_get_scale
from controller.algorithm.behavior import Recommendation, ScaleHistory
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import FetchFailure, MetricStatus, PodSamples, ScaleTarget, SourceType
from controller.kube.last_decision import MAX_LAST_DECISION_BYTES, limiting_reason, targets_summary
from controller.kube.objects import autoscaler_from_object
from controller.kube.status import (StatusDraft, WriteReason, build_status, history_checkpoint, metric_status_json,
                                    plan_status_write)
from controller.kube.times import parse_time

T0 = parse_time("2026-11-25T12:00:00Z")
CPU50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
RPS = {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                "target": {"type": "AverageValue", "averageValue": "10"}}}


def autoscaler(metrics=(CPU50,), status=None, **extra):
    return autoscaler_from_object({
        "kind": "PromAutoscaler", "metadata": {"name": "web", "namespace": "shop", "uid": "u", "generation": 4},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 10, "metrics": list(metrics), **extra},
        **({"status": status} if status is not None else {})})


def pods(n):
    return tuple(PodInfo(name=f"p{i}", start_time=T0 - 3600, ready_transition=T0 - 3600,
                         containers=(ContainerInfo(name="app", requests={"cpu": 1000}),)) for i in range(n))


def samples(n, milli, now):
    return PodSamples(values={f"p{i}": PodMetric(value=milli, timestamp=now, window=60) for i in range(n)})


def one_sync(a, *, current=4, usage=(450,), now=T0, write_ok=True):
    observations = tuple(samples(current, u, now) if u is not None else FetchFailure(message="adapter down")
                         for u in usage)
    d = decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=current, status_replicas=current), now=now,
                         status=a.status, pods=pods(current), observations=observations, history=a.history),
               ControllerConfig())
    if d.write:
        d = complete(d, write_error=None if write_ok else "boom", now=now)
    return d


def test_status_has_hpa_fields_in_upstream_shape():
    a = autoscaler(metrics=(CPU50, RPS))
    d = one_sync(a, usage=(450, 12_000))
    s = build_status(a, d, now=T0)
    assert list(s) == ["observedGeneration", "reference", "currentReplicas", "desiredReplicas", "lastScaleTime",
                       "currentMetrics", "conditions", "targetsSummary", "lastDecision", "scaleHistory"]
    assert (s["observedGeneration"], s["reference"], s["currentReplicas"], s["desiredReplicas"]) == (
        4, "Deployment/web", 4, 5)
    assert s["lastScaleTime"] == "2026-11-25T12:00:00Z"
    assert s["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "450m"}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                  "current": {"averageValue": "12"}}}]
    assert [(c["type"], c["status"], c["reason"]) for c in s["conditions"]] == [
        ("AbleToScale", "True", "SucceededRescale"), ("ScalingActive", "True", "ValidMetricFound"),
        ("ScalingLimited", "False", "DesiredWithinRange"), ("Paused", "False", "NotPaused")]
    assert all(c["lastTransitionTime"] == "2026-11-25T12:00:00Z" for c in s["conditions"])
    assert s["targetsSummary"] == "cpu: 45%/50%, rps: 12/10"
    last = s["lastDecision"]
    assert (last["outcome"], last["limitingReason"], last["currentReplicas"], last["desiredReplicas"]) == (
        "scaled", "DesiredWithinRange", 4, 5)
    assert [(m["name"], m["value"], m["target"], m["proposal"]) for m in last["metrics"]] == [
        ("cpu resource utilization (percentage of request)", "45%", "50%", 4),
        ("pods metric rps", "12", "10", 5)]
    assert [r[0] for r in s["scaleHistory"]["recommendations"]] == [4, 5]  # first sync: current, then proposal
    assert s["scaleHistory"]["scaleUpEvents"] == []  # no behavior: the legacy path records no events
    json.dumps(s)  # JSON-ready


def test_failed_metric_keeps_upstream_empty_entry_and_reports_reason():
    a = autoscaler(metrics=(CPU50, RPS))
    d = one_sync(a, usage=(100, None))  # cpu alone would scale down: upstream refuses to
    s = build_status(a, d, now=T0)
    assert s["currentMetrics"][1] == {"type": ""}
    assert (s["lastDecision"]["limitingReason"], s["lastDecision"]["outcome"]) == (
        "FailedGetPodsMetric", "blocked by metric errors")
    assert "adapter down" in s["lastDecision"]["metrics"][1]["error"]
    assert s["targetsSummary"] == "cpu: 10%/50%, rps: <unknown>/10"


def test_paused_and_preview_are_visible():
    a = autoscaler(paused=True, mode="Preview")
    s = build_status(a, one_sync(a, usage=(900,)), now=T0)
    paused = s["conditions"][-1]
    assert (paused["type"], paused["status"], paused["reason"]) == ("Paused", "True", "Paused")
    assert s["lastDecision"]["limitingReason"] == "Paused" and s["lastDecision"]["applied"] is False


def test_paused_condition_keeps_transition_time_until_it_flips():
    first = build_status(a := autoscaler(paused=True), one_sync(a), now=T0)
    later = autoscaler(paused=True, status=first)
    assert build_status(later, one_sync(later, now=T0 + 60), now=T0 + 60)["conditions"][-1][
        "lastTransitionTime"] == "2026-11-25T12:00:00Z"
    resumed = autoscaler(paused=False, status=first)
    assert build_status(resumed, one_sync(resumed, now=T0 + 60), now=T0 + 60)["conditions"][-1][
        "lastTransitionTime"] == "2026-11-25T12:01:00Z"


def test_failed_get_scale_keeps_previous_checkpoint():
    prior = {"scaleHistory": {"savedAt": "2026-11-25T11:59:00Z", "recommendations": [[3, T0 - 60]],
                              "scaleUpEvents": [], "scaleDownEvents": []}}
    a = autoscaler(status=prior)
    d = failed_get_scale(a.status, 'deployments.apps "web" not found', now=T0, history=None)
    s = build_status(a, d, now=T0)
    assert s["scaleHistory"] == prior["scaleHistory"]
    assert s["lastDecision"]["limitingReason"] == "FailedGetScale"


def test_checkpoint_round_trips_through_status():
    a = autoscaler()
    s = build_status(a, one_sync(a, usage=(900,), now=T0 + 0.25), now=T0 + 0.25)
    again = autoscaler(status=s)
    assert again.problems == () and again.history is not None
    assert again.history.recommendations == (Recommendation(replicas=4, timestamp=T0 + 0.25),
                                             Recommendation(replicas=8, timestamp=T0 + 0.25))


def test_last_decision_stays_bounded():
    many = [{"type": "Pods", "pods": {"metric": {"name": f"metric-with-a-long-name-{i:02d}" + "x" * 60},
                                      "target": {"type": "AverageValue", "averageValue": "10"}}} for i in range(40)]
    a = autoscaler(metrics=many)
    d = one_sync(a, usage=tuple(12_000 for _ in many))
    last = build_status(a, d, now=T0)["lastDecision"]
    assert len(json.dumps(last, separators=(",", ":")).encode()) <= MAX_LAST_DECISION_BYTES
    assert 0 < len(last["metrics"]) < 40 and "of 40 metrics" in last["truncated"]


@pytest.mark.parametrize(("metrics", "usage", "want"), [
    pytest.param((CPU50,), (450,), "cpu: 45%/50%", id="one"),
    pytest.param((CPU50, RPS, CPU50), (450, 3000, 450), "cpu: 45%/50%, rps: 3/10 + 1 more...", id="more"),
    pytest.param((), None, "cpu: <unknown>/80%", id="none-defaults-to-cpu-80"),
])
def test_targets_summary_like_kubectl(metrics, usage, want):
    a = autoscaler(metrics=metrics)
    current = one_sync(a, usage=usage).status.current_metrics if usage else ()
    assert targets_summary(a.spec.metrics, current) == want


def test_object_metric_status_names_described_object():
    obj = {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
        "target": {"type": "Value", "value": "2k"}}}
    a = autoscaler(metrics=(obj,))
    entry = metric_status_json(MetricStatus(type=SourceType.OBJECT, name="hits", value=1_500_000), a.spec.metrics[0], obj)
    assert entry == {"type": "Object", "object": {
        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
        "metric": {"name": "hits"}, "current": {"value": "1500"}}}


# ---- the write rule ----

def steady(now, usage=450, previous=None):
    a = autoscaler(status=previous)
    return build_status(a, one_sync(a, usage=(usage,), now=now), now=now)


def test_first_status_is_written_then_identical_syncs_are_not():
    first = steady(T0)
    assert plan_status_write({}, first, now=T0) is WriteReason.CHANGED
    again = steady(T0 + 15, previous=first)
    assert plan_status_write(first, again, now=T0 + 15) is None


@pytest.mark.parametrize(("change", "want"), [
    pytest.param(lambda s: {**s, "desiredReplicas": 9}, WriteReason.CHANGED, id="desired"),
    pytest.param(lambda s: {**s, "observedGeneration": 5}, WriteReason.CHANGED, id="generation"),
    pytest.param(lambda s: {**s, "conditions": [{**s["conditions"][0], "message": "x"}, *s["conditions"][1:]]},
                 WriteReason.CHANGED, id="condition-message"),
    pytest.param(lambda s: {**s, "lastDecision": {**s["lastDecision"], "limitingReason": "ScaleUpLimit"}},
                 WriteReason.DECISION, id="limiting-reason"),
    pytest.param(lambda s: {**s, "conditions": [{**c, "lastTransitionTime": "2030-01-01T00:00:00Z"}
                                                for c in s["conditions"]]}, None, id="times-only"),
])
def test_semantic_changes_write_at_once(change, want):
    first = steady(T0)
    assert plan_status_write(first, change(first), now=T0 + 1) is want


def test_steady_load_writes_at_most_twice_a_minute():
    """Four syncs a minute with jittering metric values and a growing history."""
    written, writes = steady(T0), 0
    for k in range(1, 41):  # ten minutes at 15 s
        now = T0 + 15 * k
        new = steady(now, usage=440 + (k % 3) * 5, previous=written)
        if plan_status_write(written, new, now=now) is not None:
            written, writes = new, writes + 1
    assert writes <= 20


def test_checkpoint_is_due_after_a_minute_even_without_other_changes():
    first = steady(T0)
    later = steady(T0 + 60, previous=first)
    assert plan_status_write(first, later, now=T0 + 59) is None
    assert plan_status_write(first, later, now=T0 + 60) is WriteReason.CHECKPOINT
    assert plan_status_write(first, later, now=T0 + 20, force_checkpoint=True) is WriteReason.CHECKPOINT


@pytest.mark.parametrize(("decision_conditions", "paused", "want"), [
    pytest.param("scaled", False, "DesiredWithinRange", id="within-range"),
    pytest.param("scaled", True, "Paused", id="paused"),
])
def test_limiting_reason(decision_conditions, paused, want):
    a = autoscaler()
    assert limiting_reason(one_sync(a, usage=(600,)), paused=paused) == want


def test_limiting_reason_at_max():
    a = autoscaler()
    assert limiting_reason(one_sync(a, current=8, usage=(5000,))) == "TooManyReplicas"
    assert limiting_reason(one_sync(a, current=4, usage=(5000,))) == "ScaleUpLimit"


def test_history_none_without_prior_checkpoint_writes_no_checkpoint():
    a = autoscaler()
    d = failed_get_scale(a.status, "boom", now=T0, history=None)
    assert "scaleHistory" not in build_status(a, d, now=T0)


def test_restored_history_is_used_by_the_next_decision():
    prior = ScaleHistory(recommendations=(Recommendation(replicas=9, timestamp=T0 - 30),))
    a = autoscaler(status={"scaleHistory": history_checkpoint(prior, T0 - 30)})
    d = one_sync(a, current=9, usage=(100,))  # wants 2, but a recent recommendation of 9 holds it
    assert d.desired_replicas == 9 and limiting_reason(d) == "ScaleDownStabilized"


@pytest.mark.parametrize(("usage", "later", "paused", "force"), [
    pytest.param(450, 15, False, False, id="steady-15s"),
    pytest.param(455, 35, False, False, id="metrics-age"),
    pytest.param(450, 60, False, False, id="checkpoint-age"),
    pytest.param(450, 20, False, True, id="forced-checkpoint"),
    pytest.param(900, 15, False, False, id="scale-up"),
    pytest.param(450, 15, True, False, id="paused"),
    pytest.param(None, 15, False, False, id="metric-failed"),
])
def test_the_lazy_draft_plans_like_the_whole_status(usage, later, paused, force):
    first = steady(T0)
    a = autoscaler(status=first, paused=paused)
    now = T0 + later
    decision = one_sync(a, usage=(usage,), now=now)
    draft = StatusDraft(a, decision, now=now)
    assert plan_status_write(first, draft, now=now, force_checkpoint=force) is \
        plan_status_write(first, build_status(a, decision, now=now), now=now, force_checkpoint=force)
    assert draft.to_dict() == build_status(a, decision, now=now)
    assert list(draft.to_dict()) == list(build_status(a, decision, now=now)), "same field order"
    unbuilt = StatusDraft(a, decision, now=now)
    assert unbuilt.conditions_key() == [(c["type"], c["status"], c["reason"], c["message"])
                                        for c in build_status(a, decision, now=now)["conditions"]]

