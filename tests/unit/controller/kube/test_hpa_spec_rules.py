"""A PromAutoscaler that got past admission (stored before the CRD was upgraded) but breaks a rule
of upstream's `ValidateHorizontalPodAutoscaler` is never synced, so never scaled: the controller's
reading of the spec names the field with upstream's meaning, and the loop only reports the object
(tests/unit/controller/test_invalid_spec.py). What upstream accepts still reads."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.kube.hpa_spec import SpecError, autoscaler_spec, scale_target_ref
from controller.kube.objects import KIND
from controller.report import Result, WriteResult
from kubecommon.kube.objects import from_api

from tests.unit.controller.world import KEY, loop_rig, pas_json

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
AVG = {"type": "AverageValue", "averageValue": "1"}
UTIL = {"type": "Utilization", "averageUtilization": 50}


def spec(**fields: Any) -> dict[str, Any]:
    return {"scaleTargetRef": TARGET, "maxReplicas": 5, **fields}


def pods(target: dict[str, Any], name: str = "rps") -> dict[str, Any]:
    return {"type": "Pods", "pods": {"metric": {"name": name}, "target": target}}


def resource(target: dict[str, Any], name: str = "cpu") -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def external(target: dict[str, Any]) -> dict[str, Any]:
    return {"type": "External", "external": {"metric": {"name": "queue"}, "target": target}}


def object_metric(target: dict[str, Any], **described: str) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "Service", "name": "front", **described}
    return {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": ref, "target": target}}


def read(body: dict[str, Any]) -> None:
    autoscaler_spec(body)
    scale_target_ref(body)


BROKEN = [
    pytest.param(spec(minReplicas=6), "spec.maxReplicas: Invalid value: 5: must be greater than or equal to "
                 "`minReplicas`", id="max-below-min"),
    pytest.param(spec(minReplicas=0), "spec.metrics: Forbidden: must specify at least one Object or External "
                 "metric to support scaling to zero replicas", id="scale-to-zero-on-cpu"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": "../../secrets"}), 'spec.scaleTargetRef.name: Invalid value: '
                 "\"../../secrets\": may not contain '/'", id="target-name-slash"),
    pytest.param(spec(scaleTargetRef={**TARGET, "kind": ".."}), "spec.scaleTargetRef.kind: Invalid value: \"..\": "
                 "may not be '..'", id="target-kind-dotdot"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": "a%2Fb"}), "spec.scaleTargetRef.name: Invalid value: "
                 "\"a%2Fb\": may not contain '%'", id="target-name-percent"),
    pytest.param(spec(metrics=[{"type": "Pods"}]), "spec.metrics[0].pods: Required value: must populate "
                 "information for the given metric source", id="member-missing"),
    pytest.param(spec(metrics=[{**pods(AVG), "resource": {"name": "cpu", "target": UTIL}}]),
                 "spec.metrics[0].resource: Forbidden: must populate the given metric source only", id="second-member"),
    pytest.param(spec(metrics=[pods({"averageValue": "1"})]), "spec.metrics[0].pods.target.type: Required value: "
                 "must specify a metric target type", id="target-type-missing"),
    pytest.param(spec(metrics=[pods({"type": "Most", "averageValue": "1"})]), 'spec.metrics[0].pods.target.type: '
                 'Invalid value: "Most": must be either Utilization, Value, or AverageValue', id="target-type-bad"),
    pytest.param(spec(metrics=[resource({"type": "Utilization"})]), "spec.metrics[0].resource.target."
                 "averageUtilization: Required value: must set either a target raw value or a target utilization",
                 id="resource-without-value"),
    pytest.param(spec(metrics=[resource({**UTIL, "averageValue": "1"})]), "spec.metrics[0].resource.target."
                 "averageValue: Forbidden: may not set both a target raw value and a target utilization",
                 id="resource-with-both"),
    pytest.param(spec(metrics=[pods({"type": "Value", "value": "1"})]), "spec.metrics[0].pods.target.averageValue: "
                 "Required value: must specify a positive target averageValue", id="pods-without-averageValue"),
    pytest.param(spec(metrics=[object_metric({"type": "Value"})]), "spec.metrics[0].object.target.averageValue: "
                 "Required value: must set either a target value or averageValue", id="object-without-value"),
    pytest.param(spec(metrics=[external({"type": "Value"})]), "spec.metrics[0].external.target.averageValue: "
                 "Required value: must set either a target value for metric or a per-pod target",
                 id="external-without-value"),
    pytest.param(spec(metrics=[external({"type": "Value", "value": "1", "averageValue": "1"})]),
                 "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a "
                 "per-pod target", id="external-with-both"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": "0"})]), 'spec.metrics[0].pods.target.'
                 'averageValue: Invalid value: "0": must be positive', id="averageValue-zero"),
    pytest.param(spec(metrics=[object_metric({"type": "Value", "value": "-500m"})]), "spec.metrics[0].object."
                 'target.value: Invalid value: "-500m": must be positive', id="value-negative"),
    pytest.param(spec(metrics=[resource({"type": "Utilization", "averageUtilization": 0})]), "spec.metrics[0]."
                 "resource.target.averageUtilization: Invalid value: 0: must be greater than or equal to 1",
                 id="utilization-zero"),
    pytest.param(spec(metrics=[pods(AVG, name="")]), "spec.metrics[0].pods.metric.name: Required value: must "
                 "specify a metric name", id="metric-name-empty"),
    pytest.param(spec(metrics=[pods(AVG, name="rps/x")]), 'spec.metrics[0].pods.metric.name: Invalid value: '
                 "\"rps/x\": may not contain '/'", id="metric-name-slash"),
    pytest.param(spec(metrics=[resource(UTIL, name="")]), "spec.metrics[0].resource.name: Required value: must "
                 "specify a resource name", id="resource-name-empty"),
    pytest.param(spec(metrics=[{"type": "ContainerResource", "containerResource": {"name": "cpu", "target": UTIL}}]),
                 "spec.metrics[0].containerResource.container: Required value: must specify a container",
                 id="container-missing"),
    pytest.param(spec(metrics=[{"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "App", "target": UTIL}}]), 'spec.metrics[0].containerResource.container: '
                 'Invalid value: "App": must be a lowercase RFC 1123 label', id="container-not-a-label"),
    pytest.param(spec(metrics=[object_metric(AVG, name="")]), "spec.metrics[0].object.describedObject.name: "
                 "Required value", id="described-name-empty"),
    pytest.param(spec(metrics=[object_metric(AVG, apiVersion="a/b/c")]), "spec.metrics[0].object.describedObject."
                 'apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
                 id="described-apiVersion"),
    pytest.param(spec(behavior={"scaleUp": {"policies": []}}), "spec.behavior.scaleUp.policies: Required value: "
                 "must specify at least one Policy", id="policies-empty"),
    pytest.param(spec(behavior={"scaleDown": {"stabilizationWindowSeconds": 3601}}), "spec.behavior.scaleDown."
                 "stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600",
                 id="window-above-3600"),
    pytest.param(spec(behavior={"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}),
                 "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than or "
                 "equal to 1800", id="period-above-1800"),
    pytest.param(spec(behavior={"scaleUp": {"tolerance": "-0.1"}}), 'spec.behavior.scaleUp.tolerance: Invalid '
                 'value: "-0.1": must be greater than or equal to 0', id="tolerance-negative"),
]


@pytest.mark.parametrize(("body", "message"), BROKEN)
def test_a_spec_upstream_refuses_is_an_error_naming_the_field(body, message):
    with pytest.raises(SpecError) as err:
        read(body)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("body", [
    pytest.param(spec(minReplicas=0, metrics=[external({"type": "AverageValue", "averageValue": "5"})]),
                 id="scale-to-zero-on-an-external-metric"),
    pytest.param(spec(scaleTargetRef={"kind": "ReplicationController", "name": "legacy"}), id="no-group-is-resolved"),
    pytest.param(spec(metrics=[resource({"type": "Value", "averageValue": "250m"})]), id="type-not-checked"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": "1n"})]), id="tiny-but-positive"),
    pytest.param(spec(metrics=[{"type": "Magic", "magic": {}}]), id="unknown-type-left-to-the-algorithm"),
    pytest.param(spec(metrics=[object_metric({"type": "Value", "value": "2k"}, apiVersion="")]), id="object"),
    pytest.param(spec(behavior={"scaleUp": {"tolerance": "0", "stabilizationWindowSeconds": 3600},
                                "scaleDown": {"policies": [{"type": "Percent", "value": 10, "periodSeconds": 1800}]}}),
                 id="behavior-at-the-limits"),
])
def test_a_spec_upstream_accepts_reads(body):
    read(body)


STORED = ("max-below-min", "target-name-slash", "member-missing", "averageValue-zero", "value-negative",
          "policies-empty")


@pytest.mark.parametrize(("body", "message"), [case for case in BROKEN if case.id in STORED])
async def test_a_stored_object_that_breaks_a_rule_is_never_synced_so_never_scaled(body, message):
    rig = loop_rig()
    world, loop, observer = rig.world, rig.loop, rig.observer
    stored = pas_json(extra=copy.deepcopy(body))
    stored.pop("kind")
    loop.on_cache_change(KIND, [from_api(stored, keep_raw=True)])
    assert observer.invalid == [KEY]
    assert await loop.sync(KEY) is True  # reported (test_invalid_spec) and counted as a blocked sync
    assert [(o.result, o.scale_write) for o in observer.synced] == [(Result.BLOCKED, WriteResult.NONE)]
    assert (world.scale.updates, world.scale.gets) == ([], 0)
