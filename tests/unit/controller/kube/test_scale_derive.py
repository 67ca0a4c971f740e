"""The Scale derived from a target's object matches what kube-apiserver's /scale would answer."""

import pytest

from controller.kube.ports import ScaleInfo
from controller.kube.scale_derive import (
    CustomScalePaths, custom_scale_paths, label_selector_string, scale_from_custom, scale_from_workload,
)


@pytest.mark.parametrize(("selector", "expected"), [
    pytest.param(None, "", id="null"),
    pytest.param({}, "", id="empty"),
    pytest.param({"matchLabels": {"app": "web"}}, "app=web", id="one-label"),
    pytest.param({"matchLabels": {"tier": "fe", "app": "web"}}, "app=web,tier=fe", id="labels-sorted-by-key"),
    pytest.param({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "canary"]}]},
                 "env in (canary,prod)", id="in-values-sorted"),
    pytest.param({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]},
                 "env notin (dev)", id="notin"),
    pytest.param({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, "gpu", id="exists"),
    pytest.param({"matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]}, "!legacy",
                 id="does-not-exist"),
    pytest.param({"matchLabels": {"zone": "a", "app": "web"},
                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]},
                                       {"key": "canary", "operator": "DoesNotExist"}]},
                 "app=web,!canary,tier in (be,fe),zone=a", id="mixed-all-sorted-by-key"),
])
def test_selector_string_matches_upstream(selector, expected):
    assert label_selector_string(selector) == expected


@pytest.mark.parametrize("selector", [
    pytest.param({"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}, id="in-without-values"),
    pytest.param({"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]},
                 id="exists-with-values"),
    pytest.param({"matchExpressions": [{"key": "env", "operator": "Gt", "values": ["1"]}]}, id="unknown-operator"),
    pytest.param({"matchLabels": ["app"]}, id="labels-not-a-map"),
])
def test_a_selector_the_api_server_refuses_is_an_error(selector):
    with pytest.raises(ValueError):
        label_selector_string(selector)


def _workload(spec=None, status=None, rv="7"):
    return {"metadata": {"name": "web", "namespace": "shop", "resourceVersion": rv},
            "spec": spec if spec is not None else {}, "status": status if status is not None else {}}


@pytest.mark.parametrize(("obj", "resource", "expected"), [
    pytest.param(_workload({"replicas": 3, "selector": {"matchLabels": {"app": "web"}}}, {"replicas": 2}),
                 "deployments", ScaleInfo(spec_replicas=3, status_replicas=2, selector="app=web",
                                          resource_version="7"), id="deployment"),
    pytest.param(_workload({"replicas": 0, "selector": {"matchLabels": {"app": "web"}}}), "deployments",
                 ScaleInfo(spec_replicas=0, status_replicas=0, selector="app=web", resource_version="7"),
                 id="scaled-to-zero-no-status"),
    pytest.param(_workload({"selector": {"matchLabels": {"app": "db"}}}, {"replicas": 1}), "statefulsets",
                 ScaleInfo(spec_replicas=1, status_replicas=1, selector="app=db", resource_version="7"),
                 id="statefulset-replicas-default-1"),
    pytest.param(_workload({"replicas": 2, "selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["b", "a"]}]}}, {"replicas": 2}), "replicasets",
                 ScaleInfo(spec_replicas=2, status_replicas=2, selector="app in (a,b)", resource_version="7"),
                 id="replicaset-expressions"),
    pytest.param(_workload({"replicas": 4, "selector": {"b": "2", "a": "1"}}, {"replicas": 4}),
                 "replicationcontrollers",
                 ScaleInfo(spec_replicas=4, status_replicas=4, selector="a=1,b=2", resource_version="7"),
                 id="replicationcontroller-map-selector"),
])
def test_workload_scale(obj, resource, expected):
    assert scale_from_workload(obj, resource) == expected


@pytest.mark.parametrize("obj", [
    pytest.param(_workload({"replicas": "3"}), id="replicas-a-string"),
    pytest.param(_workload({"replicas": True}), id="replicas-a-bool"),
    pytest.param(_workload({"selector": {"matchExpressions": [{"key": "a", "operator": "Nope"}]}}),
                 id="bad-selector"),
])
def test_workloads_the_api_server_would_refuse_derive_nothing(obj):
    assert scale_from_workload(obj, "deployments") is None


CRD = {"spec": {"group": "example.com", "versions": [
    {"name": "v1beta1", "served": True},
    {"name": "v1", "served": True, "subresources": {"scale": {
        "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
        "labelSelectorPath": ".status.selector"}}}]}}
PATHS = CustomScalePaths(spec_replicas_path=".spec.size", status_replicas_path=".status.ready",
                         label_selector_path=".status.selector")


@pytest.mark.parametrize(("version", "expected"), [
    pytest.param("v1", PATHS, id="version-with-scale"),
    pytest.param("v1beta1", None, id="version-without-scale"),
    pytest.param("v2", None, id="version-not-in-crd"),
])
def test_crd_scale_paths(version, expected):
    assert custom_scale_paths(CRD, version) == expected


@pytest.mark.parametrize(("obj", "paths", "expected"), [
    pytest.param({"metadata": {"resourceVersion": "9"}, "spec": {"size": 5},
                  "status": {"ready": 4, "selector": "app=w,tier in (fe)"}}, PATHS,
                 ScaleInfo(spec_replicas=5, status_replicas=4, selector="app=w,tier in (fe)", resource_version="9"),
                 id="all-paths"),
    pytest.param({"metadata": {"resourceVersion": "9"}, "spec": {"size": 5}}, PATHS,
                 ScaleInfo(spec_replicas=5, status_replicas=0, selector="", resource_version="9"),
                 id="no-status-yet-zero-and-empty"),
    pytest.param({"metadata": {"resourceVersion": "9"}, "spec": {}, "status": {"ready": 1}},
                 CustomScalePaths(spec_replicas_path=".spec.size", status_replicas_path=".status.ready"),
                 ScaleInfo(spec_replicas=0, status_replicas=1, selector="", resource_version="9"),
                 id="no-selector-path-no-spec-replicas"),
    pytest.param({"metadata": {}, "spec": {"size": "5"}}, PATHS, None, id="spec-replicas-wrong-type"),
    pytest.param({"metadata": {}, "spec": {"size": 1}, "status": {"selector": {"app": "w"}}}, PATHS, None,
                 id="selector-not-a-string"),
    pytest.param({"metadata": {}, "spec": 3}, PATHS, None, id="path-through-a-scalar"),
])
def test_custom_resource_scale(obj, paths, expected):
    assert scale_from_custom(obj, paths) == expected
