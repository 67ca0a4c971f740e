"""hack.stack.e2e_cluster: what a real cluster runs for `make e2e KUBECONFIG=...` matches what the
end-to-end suite expects of the stand-in stack: every demo pod by its exact name and `app` label
(scheduled by the cluster, no fake node or status), the exporter's source unchanged, the Prometheus it
scrapes with honor_labels, and chart values carrying the suite's rule file and that Prometheus."""

from __future__ import annotations

import yaml

from hack.stack import e2e_cluster
from hack.stack.metrics_stack import RULES
from hack.stack.sample_exporter import demo_pods
from tests.paths import REPO


def test_manifests_create_every_demo_pod_schedulable_on_a_real_node() -> None:
    objects = e2e_cluster.manifests()
    assert not [o for o in objects if o["kind"] == "Node"]
    pods = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Pod"}
    assert set(pods) == {(p.namespace, p.name) for p in demo_pods()}
    for pod in demo_pods():
        obj = pods[(pod.namespace, pod.name)]
        assert obj["metadata"]["labels"] == {"app": pod.service}
        assert "status" not in obj and "nodeName" not in obj["spec"]
        assert [c["name"] for c in obj["spec"]["containers"]] == [pod.container]
    kinds = [o["kind"] for o in objects]
    assert kinds.index("Namespace") < kinds.index("ConfigMap") < kinds.index("Pod")


def test_exporter_and_prometheus_run_from_the_configmap() -> None:
    [files] = [o for o in e2e_cluster.manifests() if o["kind"] == "ConfigMap"]
    assert files["data"]["sample_exporter.py"] == (REPO / "hack" / "stack" / "sample_exporter.py").read_text()
    scrape = yaml.safe_load(files["data"]["prometheus.yml"])["scrape_configs"][0]
    assert scrape["honor_labels"] is True and scrape["static_configs"][0]["targets"] == ["sample-exporter:9101"]
    deployments = {o["metadata"]["name"]: o for o in e2e_cluster.manifests()
                   if o["kind"] == "Deployment" and o["metadata"]["namespace"] == e2e_cluster.SYSTEM}
    [exporter] = deployments["sample-exporter"]["spec"]["template"]["spec"]["containers"]
    assert "--host=0.0.0.0" in exporter["args"]


def test_values_point_the_chart_at_that_prometheus_with_the_suites_rules() -> None:
    values = e2e_cluster.values()
    assert (values["fullnameOverride"], values["namespaceOverride"]) == ("prom-autoscaler", "monitoring")
    assert values["prometheus"] == {"url": "http://prometheus.e2e-system.svc", "port": 9090}
    rules = yaml.safe_load(RULES)
    assert values["rules"] == {"default": False, "custom": rules["rules"], "external": rules["externalRules"],
                               "resource": rules["resourceRules"]}
