"""REST semantics of the stand-in, driven through kubectl and the kubernetes package only."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.integration.standin.manifests import configmap, deployment

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_kubectl_apply_get_delete_round_trip(kube_standin, standin_namespace):
    kube_standin.apply(configmap("settings", {"app": "web"}, {"mode": "a"}), namespace=standin_namespace)
    kube_standin.apply(configmap("settings", {"app": "web"}, {"mode": "b"}), namespace=standin_namespace)
    got = json.loads(kube_standin.kubectl("get", "configmap", "settings", "-n", standin_namespace,
                                          "-o", "json").stdout)
    assert got["data"] == {"mode": "b"}
    assert got["metadata"]["uid"] and int(got["metadata"]["resourceVersion"]) > 0
    kube_standin.kubectl("delete", "configmap", "settings", "-n", standin_namespace)
    missing = kube_standin.kubectl("get", "configmap", "settings", "-n", standin_namespace,
                                   check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): configmaps "settings" not found' in missing.stderr


def test_stale_update_is_a_409_conflict_and_fresh_one_succeeds(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        created = v1.create_namespaced_config_map(standin_namespace, configmap("c"))
        created.data = {"k": "first"}
        updated = v1.replace_namespaced_config_map("c", standin_namespace, created)
        assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
        created.data = {"k": "stale"}
        with pytest.raises(client.ApiException) as err:
            v1.replace_namespaced_config_map("c", standin_namespace, created)
        body = json.loads(err.value.body)
        assert (err.value.status, body["reason"], body["details"]) == (
            409, "Conflict", {"name": "c", "kind": "configmaps"})
        assert "the object has been modified" in body["message"]
        with pytest.raises(client.ApiException) as dup:
            v1.create_namespaced_config_map(standin_namespace, configmap("c"))
        assert (dup.value.status, json.loads(dup.value.body)["reason"]) == (409, "AlreadyExists")


@pytest.mark.parametrize("name", [
    pytest.param("web\n", id="trailing newline"), pytest.param("Web", id="upper case"),
    pytest.param("-web", id="leading dash"), pytest.param("w" * 254, id="too long"),
])
def test_invalid_names_are_422_invalid(kube_standin, standin_namespace, name):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        with pytest.raises(client.ApiException) as err:
            v1.create_namespaced_config_map(standin_namespace, configmap(name))
    assert (err.value.status, json.loads(err.value.body)["reason"]) == (422, "Invalid")


@pytest.mark.parametrize("selector, expected", [
    pytest.param("tier=front", ["a", "b"], id="equality"),
    pytest.param("tier!=front", ["c", "d"], id="inequality-includes-missing-key"),
    pytest.param("tier in (front,back),app", ["a", "c"], id="set-and-exists"),
    pytest.param("!tier", ["d"], id="does-not-exist"),
])
def test_label_selectors(kube_standin, standin_namespace, selector, expected):
    kube_standin.apply(configmap("a", {"s": "1", "tier": "front", "app": "x"}),
                       configmap("b", {"s": "1", "tier": "front"}),
                       configmap("c", {"s": "1", "tier": "back", "app": "y"}),
                       configmap("d", {"s": "1", "app": "z"}), namespace=standin_namespace)
    # `s=1` keeps the namespace's own kube-root-ca.crt ConfigMap out of the results.
    out = kube_standin.kubectl("get", "configmaps", "-n", standin_namespace, "-l", f"s=1,{selector}",
                               "-o", "jsonpath={.items[*].metadata.name}")
    assert sorted(out.stdout.split()) == expected


def test_field_selector_and_bad_selectors_are_400(kube_standin, standin_namespace):
    kube_standin.apply(configmap("one"), configmap("two"), namespace=standin_namespace)
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        items = v1.list_namespaced_config_map(standin_namespace,
                                              field_selector="metadata.name=two").items
        assert [i.metadata.name for i in items] == ["two"]
        for kwargs in ({"label_selector": "a in (b"}, {"field_selector": "data.k=v"}):
            with pytest.raises(client.ApiException) as err:
                v1.list_namespaced_config_map(standin_namespace, **kwargs)
            assert (err.value.status, json.loads(err.value.body)["reason"]) == (400, "BadRequest")


def test_missing_namespace_and_cluster_scope(kube_standin):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        with pytest.raises(client.ApiException) as err:
            v1.create_namespaced_config_map("no-such-namespace", configmap("x"))
        assert err.value.status == 404
        assert json.loads(err.value.body)["message"] == 'namespaces "no-such-namespace" not found'
        nodes = v1.list_node().items
        assert nodes and all(n.metadata.namespace is None for n in nodes)


def test_list_pagination_with_continue(kube_standin, standin_namespace):
    kube_standin.apply(*[configmap(f"p{i}", {"page": "yes"}) for i in range(5)],
                       namespace=standin_namespace)
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        first = v1.list_namespaced_config_map(standin_namespace, label_selector="page", limit=2)
        assert [i.metadata.name for i in first.items] == ["p0", "p1"]
        assert first.metadata.remaining_item_count == 3
        rest = v1.list_namespaced_config_map(standin_namespace, label_selector="page",
                                             _continue=first.metadata._continue)
        assert [i.metadata.name for i in rest.items] == ["p2", "p3", "p4"]
        assert rest.metadata._continue is None


def test_discovery_lists_groups_for_kubectl(kube_standin):
    out = kube_standin.kubectl("api-resources", "-o", "name").stdout.split()
    for name in ("pods", "deployments.apps", "horizontalpodautoscalers.autoscaling",
                 "apiservices.apiregistration.k8s.io", "leases.coordination.k8s.io",
                 "events.events.k8s.io", "customresourcedefinitions.apiextensions.k8s.io"):
        assert name in out


def test_generation_moves_on_spec_changes_only(kube_standin, standin_namespace):
    kube_standin.apply(deployment("gen", 0), namespace=standin_namespace)
    kube_standin.kubectl("label", "deployment", "gen", "-n", standin_namespace, "extra=1")
    get = ("get", "deployment", "gen", "-n", standin_namespace, "-o",
           "jsonpath={.metadata.generation}")
    assert kube_standin.kubectl(*get).stdout == "1"
    kube_standin.kubectl("patch", "deployment", "gen", "-n", standin_namespace, "--type=json",
                         "-p", '[{"op":"replace","path":"/spec/replicas","value":2}]')
    assert kube_standin.kubectl(*get).stdout == "2"


def test_kubectl_typed_create_commands_send_protobuf_and_work(kube_standin, standin_namespace):
    ns = standin_namespace
    kube_standin.kubectl("create", "configmap", "proto", "--from-literal=key=value", "-n", ns)
    kube_standin.kubectl("create", "secret", "generic", "proto", "--from-literal=pw=s3cret", "-n", ns)
    kube_standin.kubectl("create", "deployment", "proto", "--image=nginx:1.27", "--replicas=0",
                         "-n", ns)
    cm = json.loads(kube_standin.kubectl("get", "cm", "proto", "-n", ns, "-o", "json").stdout)
    assert cm["data"] == {"key": "value"}
    secret = json.loads(kube_standin.kubectl("get", "secret", "proto", "-n", ns, "-o", "json").stdout)
    assert secret["data"] == {"pw": "czNjcmV0"} and secret["type"] == "Opaque"
    dep = json.loads(kube_standin.kubectl("get", "deploy", "proto", "-n", ns, "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 0  # an explicit zero survives (pointer field)
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert "minReadySeconds" not in dep["spec"]  # omitempty zero dropped as Go does


@pytest.mark.parametrize("obj, field", [
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}},
                 "spec.containers", id="pod-without-containers"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "bad-label", "labels": {"a": "not valid!"}}},
                 "metadata.labels", id="invalid-label-value"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mismatch"},
                  "spec": {"selector": {"matchLabels": {"app": "a"}},
                           "template": {"metadata": {"labels": {"app": "b"}},
                                        "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
                 "spec.template.metadata.labels", id="selector-not-matching-template"),
])
def test_invalid_objects_are_rejected_naming_the_field(kube_standin, standin_namespace, obj, field):
    out = kube_standin.kubectl("create", "-n", standin_namespace, "-f", "-", input=json.dumps(obj),
                               check=False)
    assert out.returncode == 1
    assert f'The {obj["kind"]} "{obj["metadata"]["name"]}" is invalid: {field}' in out.stderr
