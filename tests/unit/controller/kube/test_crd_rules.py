"""Admission of a PromAutoscaler's spec against upstream's `ValidateHorizontalPodAutoscaler`:
what kube-apiserver refuses for an autoscaling/v2 HPA, the CRD refuses too, naming the same
field with a message of the same meaning; what it accepts, the CRD accepts. Checked with the
stand-in's implementation of structural-schema and CEL admission (`hack/kube_standin`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from hack.kube_standin import structural
from tests.paths import REPO

CRD_PATH = REPO / "charts/prom-autoscaler/crds/promautoscalers.yaml"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
SEGMENT_PATTERN = r"^(|[^/%.][^/%]*|\.[^/%.][^/%]*|\.\.[^/%]+)$"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    (version,) = yaml.safe_load(CRD_PATH.read_text())["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def admit(schema: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """What the API server says of this spec, as `field: message` lines (empty: admitted)."""
    obj = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
           "metadata": {"name": "web", "namespace": "shop"}, "spec": copy.deepcopy(spec)}
    structural.apply_defaults(obj, schema)
    structural.prune(obj, schema)
    return [f"{path}: {message}" for path, message in structural.validate(obj, schema)]


def spec(**fields: Any) -> dict[str, Any]:
    return {"scaleTargetRef": TARGET, "maxReplicas": 5, **fields}


def metric(kind: str, **body: Any) -> dict[str, Any]:
    return {"type": kind, **body}


def pods(target: dict[str, Any], name: str = "rps") -> dict[str, Any]:
    return metric("Pods", pods={"metric": {"name": name}, "target": target})


def resource(target: dict[str, Any], name: str = "cpu") -> dict[str, Any]:
    return metric("Resource", resource={"name": name, "target": target})


def external(target: dict[str, Any]) -> dict[str, Any]:
    return metric("External", external={"metric": {"name": "queue"}, "target": target})


def object_metric(target: dict[str, Any], **described: str) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "Service", "name": "front", **described}
    return metric("Object", object={"metric": {"name": "hits"}, "describedObject": ref, "target": target})


AVG = {"type": "AverageValue", "averageValue": "1"}
UTIL = {"type": "Utilization", "averageUtilization": 50}


@pytest.mark.parametrize(("body", "refusal"), [
    # spec.minReplicas / maxReplicas
    pytest.param(spec(maxReplicas=0), "spec.maxReplicas: Invalid value: 0: spec.maxReplicas in body should be "
                 "greater than or equal to 1", id="max-at-least-1"),
    pytest.param(spec(minReplicas=0, metrics=[pods(AVG)]), "spec.metrics: Forbidden: must specify at least one "
                 "Object or External metric to support scaling to zero replicas",
                 id="min-0-needs-an-object-or-external-metric"),
    pytest.param(spec(minReplicas=0), "spec.metrics: Forbidden: must specify at least one Object or External metric "
                 "to support scaling to zero replicas", id="min-0-with-the-default-cpu-metric"),
    pytest.param(spec(minReplicas=-1), "spec.minReplicas: Invalid value: -1: spec.minReplicas in body should be "
                 "greater than or equal to 0", id="min-not-negative"),
    pytest.param(spec(minReplicas=6), 'spec.maxReplicas: Invalid value: "object": must be greater than or equal '
                 "to `minReplicas`", id="max-below-min-names-maxReplicas"),
    # spec.scaleTargetRef
    pytest.param(spec(scaleTargetRef={"kind": "Deployment", "name": "web"}),
                 'spec.scaleTargetRef.apiVersion: Invalid value: "object": apiVersion must specify API group',
                 id="target-apiVersion-missing"),
    pytest.param(spec(scaleTargetRef={**TARGET, "apiVersion": "v1"}),
                 'spec.scaleTargetRef.apiVersion: Invalid value: "object": apiVersion must specify API group',
                 id="target-apiVersion-without-group"),
    pytest.param(spec(scaleTargetRef={**TARGET, "apiVersion": "apps/v1/x"}),
                 'spec.scaleTargetRef.apiVersion: Invalid value: "string": unexpected GroupVersion string: '
                 "apps/v1/x", id="target-apiVersion-unparsable"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": ""}),
                 "spec.scaleTargetRef.name: Required value: must not be empty", id="target-name-empty"),
    pytest.param(spec(scaleTargetRef={**TARGET, "kind": ""}),
                 "spec.scaleTargetRef.kind: Required value: must not be empty", id="target-kind-empty"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": "web/v2"}),
                 "spec.scaleTargetRef.name: Invalid value: \"string\": may not contain '/'", id="target-name-slash"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": "50%"}),
                 "spec.scaleTargetRef.name: Invalid value: \"string\": may not contain '%'", id="target-name-percent"),
    pytest.param(spec(scaleTargetRef={**TARGET, "kind": ".."}),
                 "spec.scaleTargetRef.kind: Invalid value: \"string\": may not be '..'", id="target-kind-dotdot"),
    pytest.param(spec(scaleTargetRef={**TARGET, "name": "."}),
                 "spec.scaleTargetRef.name: Invalid value: \"string\": may not be '.'", id="target-name-dot"),
    # spec.metrics[]: the member that type names, and only it
    pytest.param(spec(metrics=[metric("Pods")]), "spec.metrics[0].pods: Required value: must populate "
                 "information for the given metric source", id="member-missing"),
    pytest.param(spec(metrics=[metric("Pods", resource={"name": "cpu", "target": UTIL})]),
                 "spec.metrics[0].pods: Required value: must populate information for the given metric source",
                 id="other-member-only"),
    pytest.param(spec(metrics=[{**pods(AVG), "external": {"metric": {"name": "q"}, "target": AVG}}]),
                 "spec.metrics[0].external: Forbidden: must populate the given metric source only",
                 id="second-member"),
    # targets: which value each source needs
    pytest.param(spec(metrics=[resource({"type": "Utilization"})]),
                 "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target "
                 "raw value or a target utilization", id="resource-without-value"),
    pytest.param(spec(metrics=[resource({**UTIL, "averageValue": "100m"})]),
                 "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value "
                 "and a target utilization", id="resource-with-both"),
    pytest.param(spec(metrics=[metric("ContainerResource", containerResource={
        "name": "cpu", "container": "app", "target": {"type": "AverageValue"}})]),
                 "spec.metrics[0].containerResource.target.averageUtilization: Required value: must set either "
                 "a target raw value or a target utilization", id="container-resource-without-value"),
    pytest.param(spec(metrics=[pods({"type": "Value", "value": "10"})]),
                 "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target "
                 "averageValue", id="pods-needs-averageValue"),
    pytest.param(spec(metrics=[object_metric({"type": "Value"})]),
                 "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or "
                 "averageValue", id="object-without-value"),
    pytest.param(spec(metrics=[external({"type": "AverageValue"})]),
                 "spec.metrics[0].external.target.averageValue: Required value: must set either a target value "
                 "for metric or a per-pod target", id="external-without-value"),
    pytest.param(spec(metrics=[external({"type": "Value", "value": "1", "averageValue": "1"})]),
                 "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric "
                 "and a per-pod target", id="external-with-both"),
    pytest.param(spec(metrics=[resource({"type": "Utilization", "averageUtilization": 0})]),
                 "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: spec.metrics[0].resource."
                 "target.averageUtilization in body should be greater than or equal to 1", id="utilization-zero"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": 0})]),
                 "spec.metrics[0].pods.target.averageValue: Invalid value: 0: spec.metrics[0].pods.target."
                 "averageValue in body should be greater than or equal to 1", id="quantity-int-zero"),
    # names of metrics, resources, containers and described objects
    pytest.param(spec(metrics=[pods(AVG, name="")]),
                 "spec.metrics[0].pods.metric.name: Required value: must specify a metric name", id="metric-name"),
    pytest.param(spec(metrics=[pods(AVG, name="a/b")]),
                 f'spec.metrics[0].pods.metric.name: Invalid value: "a/b": spec.metrics[0].pods.metric.name in '
                 f"body should match '{SEGMENT_PATTERN}'", id="metric-name-slash"),
    pytest.param(spec(metrics=[resource(UTIL, name="")]),
                 "spec.metrics[0].resource.name: Required value: must specify a resource name", id="resource-name"),
    pytest.param(spec(metrics=[metric("ContainerResource", containerResource={
        "name": "cpu", "container": "", "target": UTIL})]),
                 "spec.metrics[0].containerResource.container: Required value: must specify a container",
                 id="container-name"),
    pytest.param(spec(metrics=[object_metric(AVG, name="")]),
                 "spec.metrics[0].object.describedObject.name: Required value: must not be empty",
                 id="described-name"),
    pytest.param(spec(metrics=[object_metric(AVG, apiVersion="a/b/c")]),
                 'spec.metrics[0].object.describedObject.apiVersion: Invalid value: "a/b/c": spec.metrics[0].'
                 "object.describedObject.apiVersion in body should match '^[^/]*(/[^/]*)?$'",
                 id="described-apiVersion-unparsable"),
    # behavior
    pytest.param(spec(behavior={"scaleUp": {"policies": []}}),
                 "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
                 id="policies-empty"),
    pytest.param(spec(behavior={"scaleDown": {"tolerance": -1}}),
                 "spec.behavior.scaleDown.tolerance: Invalid value: -1: spec.behavior.scaleDown.tolerance in body "
                 "should be greater than or equal to 0", id="tolerance-negative-int"),
])
def test_what_upstream_refuses_is_refused_naming_the_field(schema, body, refusal):
    assert admit(schema, body) == [refusal]


@pytest.mark.parametrize(("body", "field"), [
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": "0"})]),
                 "spec.metrics[0].pods.target.averageValue", id="averageValue-zero"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": "0.000k"})]),
                 "spec.metrics[0].pods.target.averageValue", id="averageValue-zero-with-suffix"),
    pytest.param(spec(metrics=[object_metric({"type": "Value", "value": "-2"})]),
                 "spec.metrics[0].object.target.value", id="value-negative"),
    pytest.param(spec(metrics=[external({"type": "Value", "value": "0e3"})]),
                 "spec.metrics[0].external.target.value", id="value-zero-exponent"),
    pytest.param(spec(minReplicas=0, metrics=[external({"type": "Value", "value": "10", "activationValue": "-1"})]),
                 "spec.metrics[0].external.target.activationValue", id="activation-not-negative"),
    pytest.param(spec(behavior={"scaleUp": {"tolerance": "-0.05"}}), "spec.behavior.scaleUp.tolerance",
                 id="tolerance-negative"),
    pytest.param(spec(metrics=[metric("ContainerResource", containerResource={
        "name": "cpu", "container": "App_1", "target": UTIL})]),
                 "spec.metrics[0].containerResource.container", id="container-not-a-dns-label"),
    pytest.param(spec(metrics=[object_metric(AVG, kind="a%b")]),
                 "spec.metrics[0].object.describedObject.kind", id="described-kind-percent"),
])
def test_quantities_and_names_upstream_refuses_fail_their_pattern(schema, body, field):
    (refusal,) = admit(schema, body)
    assert refusal.startswith(f"{field}: Invalid value: ")
    assert " in body should match '" in refusal


@pytest.mark.parametrize("body", [
    pytest.param(spec(scaleTargetRef={"apiVersion": "v1", "kind": "ReplicationController", "name": "rc"}),
                 id="replication-controller-needs-no-group"),
    pytest.param(spec(scaleTargetRef={"kind": "ReplicationController", "name": "rc"}),
                 id="replication-controller-without-apiVersion"),
    pytest.param(spec(metrics=[resource({"type": "AverageValue", "averageValue": "500m"})]), id="resource-raw"),
    pytest.param(spec(metrics=[resource({"type": "Value", "averageValue": "500m"})]),
                 id="target-type-not-checked-against-the-value-field"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": ".5"})]), id="fraction"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": "+1e-3"})]), id="exponent"),
    pytest.param(spec(metrics=[pods({"type": "AverageValue", "averageValue": 3})]), id="int-quantity"),
    pytest.param(spec(metrics=[pods(AVG, name="...")]), id="three-dots-is-a-name"),
    pytest.param(spec(metrics=[object_metric({"type": "Value", "value": "2k"}, apiVersion="")]),
                 id="described-object-may-omit-apiVersion"),
    pytest.param(spec(metrics=[object_metric({"type": "AverageValue", "averageValue": "2"},
                                             apiVersion="networking.k8s.io/v1", kind="Ingress")]), id="object"),
    pytest.param(spec(metrics=[external({"type": "Value", "value": "10"})]), id="external-value"),
    pytest.param(spec(minReplicas=0, scaleToZero={"cooldownSeconds": 30},
                      metrics=[pods(AVG), external({"type": "AverageValue", "averageValue": "10", "activationValue": "2"})]),
                 id="scale-to-zero-with-an-external-metric"),
    pytest.param(spec(behavior={"scaleUp": {"tolerance": "0"}, "scaleDown": {"tolerance": 0}}), id="tolerance-0"),
    pytest.param(spec(behavior={"scaleUp": {"selectPolicy": "Disabled"}}), id="policies-left-to-the-defaults"),
])
def test_what_upstream_accepts_is_admitted(schema, body):
    assert admit(schema, body) == []


def _rules_with_their_lists(node: dict[str, Any], path: str = "", lists: tuple[dict[str, Any], ...] = ()):
    for rule in node.get("x-kubernetes-validations") or ():
        yield path, node, rule["rule"], lists
    for key, child in (node.get("properties") or {}).items():
        yield from _rules_with_their_lists(child, f"{path}.{key}", lists)
    if "items" in node:
        yield from _rules_with_their_lists(node["items"], f"{path}[]", (*lists, node))


def test_validation_rules_fit_kube_apiservers_cel_cost_budget(schema):
    """kube-apiserver refuses a CRD whose rules' estimated cost is too high; the estimate multiplies
    by the largest size of every enclosing list and of the strings a rule scans. The stand-in does
    not estimate costs, so the shape that keeps the estimate low is pinned here: every list above
    a rule is bounded, and a regular expression scans only a bounded string."""
    found = list(_rules_with_their_lists(schema))
    assert len(found) > 20
    for path, node, rule, lists in found:
        assert all("maxItems" in listed for listed in lists), f"{path}: {rule} sits in an unbounded list"
        if "matches(" in rule:
            assert "maxLength" in node, f"{path}: {rule} scans an unbounded string"
