"""The PromAutoscaler CRD: structural, mirrors the HPA spec (nothing pruned), and keeps every
status field the controller writes. Admission uses the stand-in's implementation of
kube-apiserver's structural defaulting, pruning and validation."""

import copy

import pytest
import yaml

from controller.algorithm import ControllerConfig, SyncInput, complete, decide
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import ExternalSamples, ObjectSample, PodSamples, ScaleTarget
from controller.kube.objects import autoscaler_from_object
from controller.kube.status import build_status
from hack.kube_standin import structural
from tests.paths import REPO

CRD_PATH = REPO / "charts/prom-autoscaler/crds/promautoscalers.yaml"
T0 = 1_795_608_000.0

HPA_SPEC = {  # every field of an autoscaling/v2 HPA spec
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 2, "maxReplicas": 10,
    "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                            "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                  "target": {"type": "AverageValue", "averageValue": "1500m"}}},
        {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "target": {"type": "Value", "value": "2k"}}},
        {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchExpressions": [
            {"key": "q", "operator": "In", "values": ["a"]}]}}, "target": {"type": "AverageValue", "averageValue": 30}}},
    ],
    "behavior": {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "0.05",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Disabled",
                      "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]},
    },
}


@pytest.fixture(scope="module")
def crd():
    return yaml.safe_load(CRD_PATH.read_text())


@pytest.fixture(scope="module")
def schema(crd):
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def obj(spec):
    return {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": copy.deepcopy(spec)}


def structural_problems(node, path="", root=True):
    """The structural-schema rules of apiextensions (NonStructural conditions), simplified."""
    problems = []
    if node.get("x-kubernetes-int-or-string"):
        if node.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]) or "type" in node:
            problems.append(f"{path}: int-or-string must be untyped with anyOf integer|string")
        return problems
    if not node.get("type") and not node.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{path}: type missing")
    if node.get("properties") and node.get("additionalProperties"):
        problems.append(f"{path}: properties and additionalProperties together")
    for combinator in ("anyOf", "allOf", "oneOf", "not"):
        if combinator in node:
            problems.append(f"{path}: {combinator} outside int-or-string")
    for key, child in (node.get("properties") or {}).items():
        if root and key == "metadata" and set(child) - {"type"}:
            problems.append("metadata: only type: object is allowed at the root")
        problems += structural_problems(child, f"{path}.{key}", root=False)
    if "items" in node:
        problems += structural_problems(node["items"], f"{path}[]", root=False)
    if isinstance(node.get("additionalProperties"), dict):
        problems += structural_problems(node["additionalProperties"], f"{path}{{}}", root=False)
    return problems


def test_crd_identity_and_subresources(crd):
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    spec = crd["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["shortNames"]) == (
        "autoscaling.prom-autoscaler.io", "Namespaced", "PromAutoscaler", ["pas"])
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}  # no scale subresource: HPAs have none
    assert [c["name"].upper() for c in version["additionalPrinterColumns"]] == [
        "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "PREDICTED", "MODE", "REASON", "AGE"]
    # a new column is -o wide only: `kubectl get pas` prints what it printed before spec.prediction
    assert [c["name"] for c in version["additionalPrinterColumns"] if c.get("priority", 0) > 0] == ["Predicted"]


def test_schema_is_structural(schema):
    assert structural_problems(schema) == []


def test_pasted_hpa_spec_is_valid_and_nothing_is_pruned(schema):
    pasted = obj(HPA_SPEC)
    structural.apply_defaults(pasted, schema)
    assert structural.prune(pasted, schema) == []
    assert structural.validate(pasted, schema) == []
    assert (pasted["spec"]["syncPeriodSeconds"], pasted["spec"]["mode"], pasted["spec"]["paused"]) == (15, "Active", False)
    autoscaler_from_object(pasted)  # and the controller reads it


def test_minimal_spec_gets_defaults(schema):
    minimal = obj({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3})
    structural.apply_defaults(minimal, schema)
    assert structural.validate(minimal, schema) == []
    assert minimal["spec"]["minReplicas"] == 1


def test_prediction_gets_the_documented_defaults(schema):
    given = obj({**HPA_SPEC, "prediction": {}})
    structural.apply_defaults(given, schema)
    assert structural.validate(given, schema) == []
    assert given["spec"]["prediction"] == {"mode": "Off", "horizonSeconds": 300, "lookbackSeconds": 1_209_600}
    active = obj({**HPA_SPEC, "prediction": {"mode": "Active", "periodsSeconds": [86_400, 604_800]}})
    structural.apply_defaults(active, schema)
    assert structural.validate(active, schema) == [] and structural.prune(active, schema) == []
    assert autoscaler_from_object(active).spec.prediction.periods_seconds == (86_400, 604_800)


def spec_with(path, value):
    spec = copy.deepcopy(HPA_SPEC)
    node = spec
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return spec


@pytest.mark.parametrize(("spec", "field"), [
    pytest.param(spec_with(["maxReplicas"], None), "spec.maxReplicas", id="max-required"),
    pytest.param(spec_with(["minReplicas"], -1), "spec.minReplicas", id="min-at-least-0"),
    pytest.param(spec_with(["scaleTargetRef", "kind"], None), "spec.scaleTargetRef.kind", id="target-kind-required"),
    pytest.param(spec_with(["metrics", 0, "type"], "Magic"), "spec.metrics[0].type", id="metric-type-enum"),
    pytest.param(spec_with(["metrics", 0, "resource", "target", "type"], "Most"), "spec.metrics[0].resource.target.type",
                 id="target-type-enum"),
    pytest.param(spec_with(["metrics", 2, "pods", "target", "averageValue"], "lots"),
                 "spec.metrics[2].pods.target.averageValue", id="quantity-pattern"),
    pytest.param(spec_with(["behavior", "scaleUp", "policies", 0, "value"], 0),
                 "spec.behavior.scaleUp.policies[0].value", id="policy-value-positive"),
    pytest.param(spec_with(["behavior", "scaleUp", "policies", 0, "periodSeconds"], 1801),
                 "spec.behavior.scaleUp.policies[0].periodSeconds", id="period-at-most-1800"),
    pytest.param(spec_with(["behavior", "scaleUp", "policies", 0, "type"], "Nodes"),
                 "spec.behavior.scaleUp.policies[0].type", id="policy-type-enum"),
    pytest.param(spec_with(["behavior", "scaleDown", "stabilizationWindowSeconds"], 3601),
                 "spec.behavior.scaleDown.stabilizationWindowSeconds", id="window-at-most-3600"),
    pytest.param(spec_with(["behavior", "scaleDown", "selectPolicy"], "Most"), "spec.behavior.scaleDown.selectPolicy",
                 id="select-policy-enum"),
    pytest.param({**HPA_SPEC, "syncPeriodSeconds": 2}, "spec.syncPeriodSeconds", id="sync-period-floor"),
    pytest.param({**HPA_SPEC, "mode": "Dry"}, "spec.mode", id="mode-enum"),
    pytest.param({**HPA_SPEC, "prediction": {"mode": "On"}}, "spec.prediction.mode", id="prediction-mode-enum"),
    pytest.param({**HPA_SPEC, "prediction": {"horizonSeconds": 3601}}, "spec.prediction.horizonSeconds",
                 id="horizon-at-most-3600"),
    pytest.param({**HPA_SPEC, "prediction": {"lookbackSeconds": 3600}}, "spec.prediction.lookbackSeconds",
                 id="lookback-at-least-a-day"),
    pytest.param({**HPA_SPEC, "prediction": {"periodsSeconds": [60]}}, "spec.prediction.periodsSeconds[0]",
                 id="period-at-least-an-hour"),
    pytest.param({**HPA_SPEC, "prediction": {"periodsSeconds": [3600] * 5}}, "spec.prediction.periodsSeconds",
                 id="at-most-4-periods"),
])
def test_invalid_specs_are_rejected_naming_the_field(schema, spec, field):
    bad = obj(spec)
    structural.apply_defaults(bad, schema)
    assert field in [path for path, _message in structural.validate(bad, schema)]


def test_every_status_field_the_controller_writes_survives_pruning(schema):
    pasted = obj(HPA_SPEC)
    pasted["metadata"].update(uid="u", generation=1)
    a = autoscaler_from_object(pasted)
    pods = tuple(PodInfo(name=f"p{i}", start_time=T0 - 3600, ready_transition=T0 - 3600,
                         containers=(ContainerInfo(name="app", requests={"cpu": 1000, "memory": 1000}),))
                 for i in range(3))
    samples = PodSamples(values={f"p{i}": PodMetric(value=900, timestamp=T0, window=60) for i in range(3)})
    d = decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=3, status_replicas=3), now=T0, status=a.status,
                         pods=pods, history=a.history, observations=(
                             samples, samples, samples, ObjectSample(value=1000, timestamp=T0),
                             ExternalSamples(values=(1000,), timestamp=T0))), ControllerConfig())
    d = complete(d, write_error=None, now=T0)
    written = {**pasted, "status": build_status(a, d, now=T0)}
    assert [m["type"] for m in written["status"]["currentMetrics"]] == [
        "Resource", "ContainerResource", "Pods", "Object", "External"]
    kept = copy.deepcopy(written)
    assert structural.prune(kept, schema) == [] and kept == written
    assert structural.validate(written, schema) == []
