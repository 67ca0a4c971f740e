"""kubectl's everyday workflows against the stand-in, through the real kubectl: `apply -f` of a
`kind: List` (validated client-side against /openapi/v2), `explain` of a CRD (openapi v3 and the
v2 fallback), `get` with a CRD's printer columns, `get --sort-by` on fields only the whole object
has (kubectl asks the Table for `includeObject=Object`), and `wait --for=condition` on custom resources
and Deployments; then the chart's PromAutoscaler CRD through the same workflows."""

from __future__ import annotations

import json
import threading
import time

import kubernetes
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


def _event(name, seconds, reason):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "reason": reason, "message": reason, "type": "Normal",
            "lastTimestamp": f"2026-01-01T00:00:{seconds:02d}Z"}


def test_get_sort_by_a_field_outside_the_columns(cluster, standin_namespace):
    """`kubectl get events --sort-by=.lastTimestamp` (the usual way to read what happened) and
    `--sort-by` on a custom resource's spec: kubectl sorts the rows on the objects the Table
    carries, so these need the whole object, not its metadata."""
    cluster.apply(_event("b", 30, "Second"), _event("a", 50, "Third"), _event("c", 10, "First"),
                  namespace=standin_namespace)
    rows = cluster.kubectl("get", "events", "-n", standin_namespace, "--sort-by=.lastTimestamp").stdout.splitlines()
    assert [row.split()[3] for row in rows[1:]] == ["First", "Second", "Third"]
    cluster.apply(gadget("small", targetRef={"name": "web"}, maxReplicas=2),
                  gadget("big", targetRef={"name": "api"}, maxReplicas=9), namespace=standin_namespace)
    rows = cluster.kubectl("get", "gadgets", "-n", standin_namespace, "--sort-by=.spec.maxReplicas",
                           "-o", "name").stdout.split()
    assert rows == [f"gadget.{GROUP}/small", f"gadget.{GROUP}/big"]


def _table(cluster, path):
    """GET `path` as a Table with the `kubernetes` client (kubectl get --raw cannot ask for one)."""
    client = kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        method, url, headers, _, _ = client.param_serialize(
            "GET", path, header_params={"Accept": TABLE}, auth_settings=["BearerToken"])
        response = client.call_api(method, url, header_params=headers)
        response.read()
        return {**json.loads(response.data), "http_status": response.status}
    finally:
        client.close()


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize("include, kind", [("None", None), ("Metadata", "PartialObjectMetadata"), ("", "PartialObjectMetadata"),
                                           ("Object", "Event")])
def test_a_table_row_carries_the_object_include_object_asks_for(cluster, standin_namespace, include, kind):
    cluster.apply(_event("only", 10, "First"), namespace=standin_namespace)
    collection = f"/api/v1/namespaces/{standin_namespace}/events"
    for path in (f"{collection}?includeObject={include}", f"{collection}/only?includeObject={include}"):
        table = _table(cluster, path)
        assert table["http_status"] == 200, table
        (row,) = table["rows"]
        assert row["cells"][0] == "only"
        assert (row.get("object") or {}).get("kind") == kind, path
    if kind == "Event":
        assert row["object"]["apiVersion"] == "v1" and row["object"]["reason"] == "First"


def test_an_unknown_include_object_is_a_400(cluster, standin_namespace):
    answer = _table(cluster, f"/api/v1/namespaces/{standin_namespace}/events?includeObject=Everything")
    assert (answer["http_status"], answer["code"], answer["reason"]) == (400, 400, "BadRequest")
    assert answer["message"] == ("Unable to convert to Table as requested: includeObject: Invalid value: "
                                 "\"Everything\": must be 'Metadata', 'Object', 'None', or empty")


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
