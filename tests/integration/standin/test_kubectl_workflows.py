"""kubectl's everyday workflows against the stand-in, through the real kubectl: `apply -f` of a
`kind: List` (validated client-side against /openapi/v2), `explain` of a CRD (openapi v3 and the
v2 fallback), `get` with a CRD's printer columns, and `wait --for=condition` on custom resources
and Deployments; then the chart's PromAutoscaler CRD through the same workflows."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.integration.standin.crds import GROUP, PLURAL, gadget, gadget_crd
from tests.integration.standin.manifests import configmap, deployment
from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def cluster(kube_standin):
    kube_standin.apply(gadget_crd())
    kube_standin.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{GROUP}")
    return kube_standin


def _list(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def test_apply_of_a_list_creates_every_item(cluster, standin_namespace):
    items = [configmap("settings"), deployment("web", 1),
             gadget("g", targetRef={"name": "web"}, maxReplicas=3)]
    out = cluster.kubectl("apply", "-n", standin_namespace, "-f", "-", input=_list(*items))
    assert out.stdout.split("\n")[:3] == ["configmap/settings created",
                                          "deployment.apps/web created",
                                          f"gadget.{GROUP}/g created"]


def _with(obj, path, key, value):
    node = obj
    for part in path:
        node = node[part] if not isinstance(node, list) else node[int(part)]
    node[key] = value
    return obj


@pytest.mark.parametrize("item, reported", [
    pytest.param(_with(configmap("c"), [], "bogus", 1),
                 'unknown field "bogus" in io.k8s.api.core.v1.ConfigMap', id="top-level"),
    pytest.param(_with(configmap("c"), ["metadata"], "lables", {"a": "b"}),
                 'unknown field "lables" in io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
                 id="metadata"),
    pytest.param(_with(deployment("d", 1), ["spec"], "replicas", "three"),
                 'invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas: got "string", '
                 'expected "integer"', id="built-in-type"),
    pytest.param(_with(deployment("d", 1), ["spec", "template", "spec", "containers", "0"],
                       "imagePullPolicyy", "Always"),
                 'unknown field "imagePullPolicyy" in io.k8s.api.core.v1.Container', id="nested"),
    pytest.param(gadget("g", targetRef={"name": "web"}, maxReplicas=3, nope=1),
                 'unknown field "nope" in com.example.toys.v1.Gadget.spec', id="custom-resource"),
    pytest.param(gadget("g", targetRef={"kind": "Deployment"}, maxReplicas=3),
                 'missing required field "name" in com.example.toys.v1.Gadget.spec.targetRef',
                 id="custom-required"),
])
def test_apply_of_a_list_reports_bad_fields_before_sending_anything(cluster, standin_namespace,
                                                                   item, reported):
    out = cluster.kubectl("apply", "-n", standin_namespace, "-f", "-", check=False,
                          input=_list(configmap("fine"), item))
    assert out.returncode == 1
    assert "error validating data" in out.stderr and reported in out.stderr
    assert cluster.kubectl("get", "configmap", "fine", "-n", standin_namespace,
                           check=False).returncode == 1


@pytest.mark.parametrize("item, message", [
    pytest.param(_with(configmap("c"), [], "bogus", 1),
                 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding '
                 'error: unknown field "bogus"', id="built-in"),
    pytest.param(_with(deployment("d", 1), ["spec", "template", "spec", "containers", "0"],
                       "imagePullPolicyy", "Always"),
                 'strict decoding error: unknown field '
                 '"spec.template.spec.containers[0].imagePullPolicyy"', id="built-in-nested"),
    pytest.param(gadget("g", targetRef={"name": "web"}, maxReplicas=3, nope=1),
                 'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
                 'unknown field "spec.nope"', id="custom-resource"),
])
def test_apply_of_one_object_is_validated_by_the_server(cluster, standin_namespace, item,
                                                        message):
    out = cluster.kubectl("apply", "-n", standin_namespace, "-f", "-", check=False,
                          input=json.dumps(item))
    assert out.returncode == 1
    assert "Error from server (BadRequest)" in out.stderr and message in out.stderr


@pytest.mark.parametrize("output", ["plaintext", "plaintext-openapiv2"])
@pytest.mark.parametrize("field, expected", [
    pytest.param("gadgets.spec", ["What the gadget should do.", "maxReplicas",
                                  "Upper bound on replicas.", "targetRef"], id="spec"),
    pytest.param("gd.spec.behavior", ["Scaling behaviour.", "window", "Seconds to look back."],
                 id="nested-by-short-name"),
])
def test_explain_a_custom_resource_from_its_schema(cluster, output, field, expected):
    out = cluster.kubectl("explain", field, f"--output={output}").stdout
    assert "Gadget" in out
    for text in expected:
        assert text in out


def test_explain_a_built_in_kind(cluster):
    out = cluster.kubectl("explain", "deployment.spec.template.spec.containers").stdout
    assert "imagePullPolicy" in out and "resources" in out


def test_get_shows_the_printer_columns(cluster, standin_namespace):
    cluster.apply(gadget("g", targetRef={"name": "web"}, maxReplicas=3),
                  gadget("h", targetRef={"name": "api"}, maxReplicas=5, mode="Preview"),
                  namespace=standin_namespace)
    cluster.kubectl("patch", "gadget", "g", "-n", standin_namespace, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": {"currentReplicas": 2, "conditions": [
                        {"type": "Scaling", "status": "False"},
                        {"type": "Ready", "status": "True"}]}}))
    table = [line.split() for line in cluster.kubectl(
        "get", "gadgets", "-n", standin_namespace).stdout.splitlines()]
    assert table[0] == ["NAME", "TARGET", "MAX", "REPLICAS", "READY", "AGE"]
    # Missing values are null cells, which kubectl leaves blank.
    assert [row[:-1] for row in table[1:]] == [["g", "web", "3", "2", "True"], ["h", "api", "5"]]
    assert all(row[-1].endswith("s") for row in table[1:])
    wide = [line.split() for line in cluster.kubectl(
        "get", "gd", "-n", standin_namespace, "-o", "wide").stdout.splitlines()]
    assert wide[0][5] == "MODE" and [row[-2] for row in wide[1:]] == ["Active", "Preview"]


def _later(delay, *args):
    def run():
        time.sleep(delay)
        args[0].kubectl(*args[1:])
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_wait_for_a_condition_on_a_custom_resource(cluster, standin_namespace):
    cluster.apply(gadget("g", targetRef={"name": "web"}, maxReplicas=3), namespace=standin_namespace)
    status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    writer = _later(1.0, cluster, "patch", "gadget", "g", "-n", standin_namespace,
                    "--subresource=status", "--type=merge", "-p", json.dumps(status))
    out = cluster.kubectl("wait", "--for=condition=Ready", "gadget/g", "-n", standin_namespace,
                          "--timeout=20s")
    writer.join()
    assert out.stdout.strip() == f"gadget.{GROUP}/g condition met"
    late = cluster.kubectl("wait", "--for=condition=Ready=false", "gadget/g", "-n",
                           standin_namespace, "--timeout=1s", check=False)
    assert late.returncode == 1 and "timed out waiting for the condition" in late.stderr


def test_wait_for_a_deployment_to_become_available(cluster, standin_namespace):
    cluster.apply(deployment("web", 2), namespace=standin_namespace)
    out = cluster.kubectl("wait", "--for=condition=Available", "deployment/web", "-n",
                          standin_namespace, "--timeout=30s")
    assert out.stdout.strip() == "deployment.apps/web condition met"


CHART_CRD = REPO / "charts" / "prom-autoscaler" / "crds" / "promautoscalers.yaml"


def _pas(**spec):
    base = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5, "metrics": [{"type": "Pods", "pods": {
                "metric": {"name": "requests_per_second"},
                "target": {"type": "AverageValue", "averageValue": "10"}}}]}
    base.update(spec)
    return {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
            "metadata": {"name": "web"}, "spec": {k: v for k, v in base.items() if v is not None}}


@pytest.fixture(scope="module")
def with_chart_crd(kube_standin):
    kube_standin.kubectl("apply", "-f", str(CHART_CRD))
    kube_standin.kubectl("wait", "--for=condition=Established",
                         "crd/promautoscalers.autoscaling.prom-autoscaler.io")
    return kube_standin


def test_chart_crd_defaults_columns_and_explain(with_chart_crd, standin_namespace):
    with_chart_crd.apply(_pas(), namespace=standin_namespace)
    spec = json.loads(with_chart_crd.kubectl("get", "pas", "web", "-n", standin_namespace,
                                             "-o", "json").stdout)["spec"]
    assert (spec["minReplicas"], spec["syncPeriodSeconds"], spec["mode"]) == (1, 15, "Active")
    header = with_chart_crd.kubectl("get", "pas", "-n", standin_namespace).stdout.split("\n")[0]
    assert header.split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS",
                              "MODE", "REASON", "AGE"]
    explained = with_chart_crd.kubectl("explain", "promautoscalers.spec.behavior").stdout
    assert "KIND:       PromAutoscaler" in explained and "scaleDown" in explained


@pytest.mark.parametrize("spec, reported", [
    pytest.param({"maxReplicas": None}, "spec.maxReplicas: Required value", id="required"),
    pytest.param({"minReplicas": 7}, 'spec.maxReplicas: Invalid value: "object": must be greater '
                 "than or equal to `minReplicas`", id="cel-rule"),
    pytest.param({"mode": "Sometimes"}, 'spec.mode: Unsupported value: "Sometimes"', id="enum"),
    pytest.param({"syncPeriodSeconds": 1}, "spec.syncPeriodSeconds: Invalid value: 1: "
                 "spec.syncPeriodSeconds in body should be greater than or equal to 3",
                 id="minimum"),
])
def test_chart_crd_rejects_bad_specs_naming_the_field(with_chart_crd, standin_namespace, spec,
                                                      reported):
    out = with_chart_crd.kubectl("apply", "-n", standin_namespace, "-f", "-", check=False,
                                 input=json.dumps(_pas(**spec)))
    assert out.returncode == 1
    assert 'The PromAutoscaler "web" is invalid' in out.stderr and reported in out.stderr
