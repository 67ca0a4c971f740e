"""PromAutoscaler / HPA JSON -> Autoscaler: what reconcile will act on, and clear errors for bad specs."""

import copy

import pytest

from controller.algorithm.behavior import PolicyType, ScalingPolicy, ScalingRules, SelectPolicy
from controller.algorithm.conditions import ConditionType, Reason
from controller.algorithm.spec import FetchFailure, MetricTarget, ObjectRef, SourceType, TargetType
from controller.kube.hpa_spec import SpecError, selector_text
from controller.kube.objects import Autoscaler, Mode, autoscaler_from_object
from controller.kube.times import parse_time
from kubecommon.kubetime import format_time
from controller.metrics.source import MetricQuery

T0 = parse_time("2026-11-25T12:00:00Z")

HPA_SPEC = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 2, "maxReplicas": 10,
    "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                  "target": {"type": "AverageValue", "averageValue": "1500m"}}},
        {"type": "Object", "object": {"metric": {"name": "hits"},
                                      "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                                          "name": "main"},
                                      "target": {"type": "Value", "value": "2k"}}},
        {"type": "External", "external": {"metric": {"name": "queue", "selector": {
            "matchExpressions": [{"key": "q", "operator": "In", "values": ["a", "b"]}]}},
            "target": {"type": "AverageValue", "averageValue": 30}}},
        {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                            "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
    ],
    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Min",
                               "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}],
                               "tolerance": "50m"}},
}


def pas(spec=None, status=None, **extra):
    obj = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
           "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "generation": 3, "resourceVersion": "77"},
           "spec": {**copy.deepcopy(HPA_SPEC if spec is None else spec), **extra}}
    if status is not None:
        obj["status"] = status
    return obj


def test_pasted_hpa_spec_reads_completely():
    a = autoscaler_from_object(pas())
    assert isinstance(a, Autoscaler)
    assert (str(a.key), a.key.kind, a.uid, a.generation, a.resource_version) == ("shop/web", "PromAutoscaler",
                                                                                 "u-1", 3, "77")
    assert (a.target.api_version, a.target.kind, a.target.name) == ("apps/v1", "Deployment", "web")
    assert (a.spec.min_replicas, a.spec.max_replicas) == (2, 10)
    assert [m.target for m in a.spec.metrics] == [
        MetricTarget(type=TargetType.UTILIZATION, average_utilization=50),
        MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=1500),
        MetricTarget(type=TargetType.VALUE, value=2_000_000),
        MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=30_000),
        MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=1024**3 * 1000),
    ]
    assert a.spec.metrics[1].selector == ("&LabelSelector{MatchLabels:map[string]string{verb: GET,},"
                                          "MatchExpressions:[]LabelSelectorRequirement{},}")
    assert a.spec.metrics[0].selector == "nil"
    assert a.metric_plans == (
        MetricQuery(type=SourceType.RESOURCE, name="cpu"),
        MetricQuery(type=SourceType.PODS, name="rps", metric_selector="verb=GET"),
        MetricQuery(type=SourceType.OBJECT, name="hits", described_object=ObjectRef(
            kind="Ingress", name="main", api_version="networking.k8s.io/v1")),
        MetricQuery(type=SourceType.EXTERNAL, name="queue", metric_selector="q in (a,b)"),
        MetricQuery(type=SourceType.CONTAINER_RESOURCE, name="memory", container="app"),
    )
    assert a.spec.behavior is not None and a.spec.behavior.scale_up is None
    assert a.spec.behavior.scale_down == ScalingRules(
        stabilization_window_seconds=60, select_policy=SelectPolicy.MIN, tolerance=0.05,
        policies=(ScalingPolicy(type=PolicyType.PODS, value=1, period_seconds=30),))
    assert (a.sync_period_seconds, a.mode, a.paused, a.writes_scale) == (15, Mode.ACTIVE, False, True)
    assert a.history is None and a.problems == ()


@pytest.mark.parametrize(("extra", "want"), [
    pytest.param({}, (15, Mode.ACTIVE, False, True), id="defaults"),
    pytest.param({"syncPeriodSeconds": 3, "mode": "Preview"}, (3, Mode.PREVIEW, False, False), id="preview"),
    pytest.param({"syncPeriodSeconds": 3600, "paused": True}, (3600, Mode.ACTIVE, True, False), id="paused"),
])
def test_extensions(extra, want):
    a = autoscaler_from_object(pas(**extra))
    assert (a.sync_period_seconds, a.mode, a.paused, a.writes_scale) == want


def test_native_hpa_is_always_preview_with_defaults():
    hpa = {**pas(spec={"scaleTargetRef": HPA_SPEC["scaleTargetRef"], "maxReplicas": 4}),
           "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2"}
    a = autoscaler_from_object(hpa)
    assert (a.key.kind, a.mode, a.writes_scale, a.spec.min_replicas, a.spec.behavior) == (
        "HorizontalPodAutoscaler", Mode.PREVIEW, False, 1, None)
    # API defaulting: no metrics means CPU utilization at 80 %
    assert a.metric_plans == (MetricQuery(type=SourceType.RESOURCE, name="cpu"),)
    assert a.spec.metrics[0].target == MetricTarget(type=TargetType.UTILIZATION, average_utilization=80)


def spec_with(**changes):
    spec = copy.deepcopy(HPA_SPEC)
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return spec


@pytest.mark.parametrize(("obj", "message"), [
    pytest.param(pas(spec=spec_with(maxReplicas=None)), "spec.maxReplicas: Required value", id="no-max"),
    pytest.param(pas(spec=spec_with(maxReplicas=0)), "spec.maxReplicas: Invalid value: 0", id="max-zero"),
    pytest.param(pas(spec=spec_with(minReplicas=11)), "spec.maxReplicas: Invalid value: 10", id="min-above-max"),
    pytest.param(pas(spec=spec_with(minReplicas="2")), "spec.minReplicas: must be an integer", id="min-string"),
    pytest.param(pas(spec=spec_with(scaleTargetRef={"kind": "Deployment"})), "spec.scaleTargetRef.name",
                 id="no-target-name"),
    pytest.param(pas(spec=spec_with(metrics=[{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {
        "type": "AverageValue", "averageValue": "lots"}}}])), "spec.metrics[0].pods.target.averageValue", id="bad-quantity"),
    pytest.param(pas(spec=spec_with(metrics=[{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {
        "type": "Average"}}}])), "spec.metrics[0].pods.target.type: Invalid value", id="bad-target-type"),
    pytest.param(pas(spec=spec_with(behavior={"scaleUp": {"policies": [{"type": "Nodes", "value": 1,
                                                                         "periodSeconds": 15}]}})),
                 "spec.behavior.scaleUp.policies[0].type", id="bad-policy-type"),
    pytest.param(pas(spec=spec_with(behavior={"scaleUp": {"selectPolicy": "Most"}})),
                 "spec.behavior.scaleUp.selectPolicy", id="bad-select-policy"),
    pytest.param(pas(syncPeriodSeconds=2), "spec.syncPeriodSeconds: Invalid value: 2", id="period-too-short"),
    pytest.param(pas(mode="Dry"), "spec.mode: Unsupported value: 'Dry'", id="bad-mode"),
    pytest.param(pas(paused="yes"), "spec.paused: Invalid value", id="paused-string"),
    pytest.param({**pas(), "spec": None}, "spec: Required value", id="no-spec"),
    pytest.param({**pas(), "kind": "Deployment"}, "kind: Unsupported value", id="wrong-kind"),
])
def test_bad_specs_name_the_field(obj, message):
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        autoscaler_from_object(obj)


@pytest.mark.parametrize(("metric", "want"), [
    pytest.param({"type": "Magic", "magic": {}}, "unknown metric source type 'Magic'", id="unknown-type"),
    pytest.param({"type": "External", "external": {"metric": {"name": "q", "selector": {"matchExpressions": [
        {"key": "q", "operator": "Near", "values": ["a"]}]}}, "target": {"type": "Value", "value": 1}}},
        "invalid metric selector", id="bad-metric-selector"),
])
def test_metrics_that_cannot_be_asked_carry_the_failure(metric, want):
    a = autoscaler_from_object(pas(spec=spec_with(metrics=[metric])))
    (plan,) = a.metric_plans
    assert isinstance(plan, FetchFailure) and want in plan.message
    assert a.spec.metrics[0].type == metric["type"]  # kept: the algorithm reports it


STATUS = {
    "observedGeneration": 2, "currentReplicas": 3, "desiredReplicas": 4, "lastScaleTime": "2026-11-25T11:59:00Z",
    "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 45, "averageValue": "230m"}}}, None,
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {"averageValue": "1200m"}}}],
    "conditions": [
        {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "message": "m1",
         "lastTransitionTime": "2026-11-25T11:00:00Z"},
        {"type": "Paused", "status": "False", "reason": "NotPaused", "message": "m"},
        {"type": "ScalingActive", "status": "False", "reason": "FailedGetPodsMetric", "message": "m2",
         "lastTransitionTime": "2026-11-25T11:30:00Z"},
    ],
    "scaleHistory": {"savedAt": "2026-11-25T11:59:30Z", "recommendations": [[3, T0 - 60], [4, T0 - 30]],
                     "scaleUpEvents": [[1, T0 - 60, False]], "scaleDownEvents": []},
}


def test_previous_status_and_history_are_restored():
    a = autoscaler_from_object(pas(status=STATUS))
    s = a.status
    assert (s.current_replicas, s.desired_replicas, s.last_scale_time) == (3, 4, T0 - 60)
    assert [(c.type, c.status, c.reason, c.last_transition_time) for c in s.conditions] == [
        (ConditionType.ABLE_TO_SCALE, True, Reason.READY_FOR_NEW_SCALE, T0 - 3600),
        (ConditionType.SCALING_ACTIVE, False, Reason.FAILED_GET_PODS_METRIC, T0 - 1800)]
    cpu, missing, rps = s.current_metrics
    assert (cpu.average_utilization, cpu.average_value, missing, rps.average_value) == (45, 230, None, 1200)
    assert [r.replicas for r in a.history.recommendations] == [3, 4]
    assert a.history.scale_up_events[0].replica_change == 1
    assert a.history_saved_at == T0 - 30 and a.problems == ()
    assert a.status_json["observedGeneration"] == 2


@pytest.mark.parametrize(("checkpoint", "problem"), [
    pytest.param("garbage", "not an object", id="not-object"),
    pytest.param({"recommendations": [[3]]}, "malformed scale history", id="short-row"),
    pytest.param({"recommendations": [["x", 1.0]]}, "malformed scale history", id="bad-number"),
    pytest.param({"savedAt": "yesterday", "recommendations": []}, "not RFC 3339", id="bad-saved-at"),
])
def test_malformed_checkpoint_is_reported_not_fatal(checkpoint, problem):
    a = autoscaler_from_object(pas(status={**STATUS, "scaleHistory": checkpoint}))
    assert a.history is None and a.history_saved_at is None
    assert len(a.problems) == 1 and problem in a.problems[0] and "starting without history" in a.problems[0]
    assert a.status.desired_replicas == 4  # the rest of status still reads


def test_bad_status_entries_are_dropped_and_named():
    status = {"conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                              "lastTransitionTime": "noon"}],
              "currentMetrics": [{"type": "Pods", "pods": {"metric": {"name": "x"}, "current": {"averageValue": "?"}}}]}
    a = autoscaler_from_object(pas(status=status))
    assert a.status.conditions[0].last_transition_time is None and a.status.current_metrics == (None,)
    assert [p.split(":")[0] for p in a.problems] == ["status.conditions[0].lastTransitionTime",
                                                     "status.currentMetrics[0].current"]


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param(None, None, id="absent"),
    pytest.param("", None, id="empty"),
    pytest.param("2026-11-25T13:00:00+01:00", T0, id="RFC 3339 (the rules: kubecommon.kubetime)"),
    pytest.param("2026-11-25 12:00:00", ValueError("timestamp '2026-11-25 12:00:00' is not RFC 3339"), id="bad"),
    pytest.param(1795608000, ValueError("timestamp 1795608000 is not a string"), id="number"),
])
def test_object_times_absent_or_named(value, expected):
    if isinstance(expected, ValueError):
        with pytest.raises(ValueError, match=str(expected)):
            parse_time(value)
    else:
        assert parse_time(value) == expected
        assert expected is None or format_time(expected) == "2026-11-25T12:00:00Z"


def test_selector_text_matches_go_printing():
    assert selector_text({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}) == (
        "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement"
        "{LabelSelectorRequirement{Key:a,Operator:In,Values:[x y],},},}")
