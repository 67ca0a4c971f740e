"""Authorization attributes derived like kube-apiserver's RequestInfo (spec §2.2 table)."""

import pytest
from aiohttp.test_utils import make_mocked_request

from kubecommon.kube.identity import UserInfo
from adapter.server.context import RequestInfos
from adapter.server.requestinfo import forbidden, review_spec
from kubecommon.requestinfo import derive_request_info
from kubecommon.status import InternalError

CM = "/apis/custom.metrics.k8s.io"


@pytest.mark.parametrize("path, query, expected", [
    pytest.param("/apis", {}, {"path": "/apis", "verb": "get"}, id="/apis is non-resource"),
    pytest.param(f"{CM}", {}, {"path": CM, "verb": "get"}, id="group is non-resource"),
    pytest.param(f"{CM}/v1beta1", {}, {"path": f"{CM}/v1beta1", "verb": "get"}, id="group-version is non-resource"),
    pytest.param(f"{CM}/v1beta1/", {}, {"path": f"{CM}/v1beta1/", "verb": "get"}, id="trailing slash kept"),
    pytest.param(f"{CM}/v1beta1/namespaces/ns/pods/*/http_requests", {},
                 {"namespace": "ns", "verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta1",
                  "resource": "pods", "subresource": "http_requests", "name": "*"}, id="namespaced wildcard"),
    pytest.param(f"{CM}/v1beta2/namespaces/ns/deployments.apps/web/rps", {},
                 {"namespace": "ns", "verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta2",
                  "resource": "deployments.apps", "subresource": "rps", "name": "web"}, id="group-qualified object"),
    pytest.param(f"{CM}/v1beta1/nodes/*/temp", {},
                 {"verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta1", "resource": "nodes",
                  "subresource": "temp", "name": "*"}, id="cluster-scoped wildcard"),
    pytest.param(f"{CM}/v1beta1/namespaces/ns/metrics/queue_depth", {},
                 {"namespace": "ns", "verb": "get", "group": "custom.metrics.k8s.io", "version": "v1beta1",
                  "resource": "metrics", "name": "queue_depth"}, id="namespace metric: resource metrics"),
    pytest.param("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue_len", {"labelSelector": "q=w"},
                 {"namespace": "ns", "verb": "list", "group": "external.metrics.k8s.io", "version": "v1beta1",
                  "resource": "queue_len"}, id="external metric is a list"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", {},
                 {"namespace": "ns", "verb": "list", "group": "metrics.k8s.io", "version": "v1beta1",
                  "resource": "pods"}, id="pod metrics list"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/pods", {},
                 {"verb": "list", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "pods"},
                 id="pod metrics across namespaces"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web-0", {},
                 {"namespace": "ns", "verb": "get", "group": "metrics.k8s.io", "version": "v1beta1",
                  "resource": "pods", "name": "web-0"}, id="one pod's metrics"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/nodes/n1", {},
                 {"verb": "get", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "nodes",
                  "name": "n1"}, id="one node's metrics"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/pods", {"fieldSelector": "metadata.name=web-0"},
                 {"verb": "list", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "pods",
                  "name": "web-0"}, id="list narrowed to a name by fieldSelector"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/pods", {"fieldSelector": "metadata.name=a/b"},
                 {"verb": "list", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "pods"},
                 id="invalid name in fieldSelector ignored"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/pods", {"watch": "true"},
                 {"verb": "watch", "group": "metrics.k8s.io", "version": "v1beta1", "resource": "pods"},
                 id="watch=true"),
    pytest.param("/openapi/v2", {}, {"path": "/openapi/v2", "verb": "get"}, id="openapi is non-resource"),
    pytest.param("/api/v1/namespaces/kube-system/configmaps/x", {},
                 {"namespace": "kube-system", "verb": "get", "version": "v1", "resource": "configmaps",
                  "name": "x"}, id="core group path"),
])
def test_review_attributes(path, query, expected):
    spec = review_spec(UserInfo(name="alice"), derive_request_info("GET", path, query))
    attributes = spec.get("resourceAttributes") or spec["nonResourceAttributes"]
    assert attributes == expected


def test_review_spec_carries_the_whole_identity():
    user = UserInfo(name="system:serviceaccount:kube-system:horizontal-pod-autoscaler", uid="u1",
                    groups=("system:serviceaccounts", "system:authenticated"),
                    extra={"authentication.kubernetes.io/credential-id": ("JTI=1",)})
    spec = review_spec(user, derive_request_info("GET", f"{CM}/v1beta1", {}))
    assert spec == {"user": user.name, "uid": "u1", "groups": ["system:serviceaccounts", "system:authenticated"],
                    "extra": {"authentication.kubernetes.io/credential-id": ["JTI=1"]},
                    "nonResourceAttributes": {"path": f"{CM}/v1beta1", "verb": "get"}}


def test_review_spec_omits_empty_user_fields():
    spec = review_spec(UserInfo(name="bob"), derive_request_info("GET", "/apis", {}))
    assert spec == {"user": "bob", "nonResourceAttributes": {"path": "/apis", "verb": "get"}}


@pytest.mark.parametrize("path, reason, message, details", [
    pytest.param(f"{CM}/v1beta1/namespaces/default/pods/*/http_requests", "",
                 'User "alice" cannot get resource "pods/http_requests" in API group "custom.metrics.k8s.io" '
                 'in the namespace "default"', {"name": "*", "group": "custom.metrics.k8s.io", "kind": "pods"},
                 id="namespaced resource"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/nodes", "no RBAC",
                 'User "alice" cannot list resource "nodes" in API group "metrics.k8s.io" at the cluster '
                 'scope: no RBAC', {"name": "", "group": "metrics.k8s.io", "kind": "nodes"},
                 id="cluster list with SAR reason"),
    pytest.param("/metrics", "", 'forbidden: User "alice" cannot get path "/metrics"', None, id="non-resource"),
])
def test_forbidden_wording(path, reason, message, details):
    error = forbidden(UserInfo(name="alice"), derive_request_info("GET", path, {}), reason)
    body = error.to_dict()
    assert body["code"] == 403 and body["reason"] == "Forbidden"
    assert body["message"].endswith(message)
    if details:
        prefix = f'{details["kind"]}.{details["group"]}'
        assert body["message"].startswith(f'{prefix} "{details["name"]}" is forbidden' if details["name"]
                                          else f"{prefix} is forbidden")
    assert body.get("details") == details


def test_request_attributes_are_derived_once_per_request_shape() -> None:
    infos = RequestInfos(4)
    path = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/rps"
    first = infos.derive(make_mocked_request("GET", f"{path}?labelSelector=app%3Dweb"))
    assert first.verb == "get" and first.namespace == "shop" and first.name == "*"
    assert infos.derive(make_mocked_request("GET", f"{path}?labelSelector=app%3Dweb")) is first
    listed = infos.derive(make_mocked_request("GET", "/api/v1/namespaces/shop/pods?watch=1"))
    assert listed.verb == "watch" and listed is not first, "the query is part of the key"
    assert infos.derive(make_mocked_request("GET", "/api/v1/namespaces/shop/pods?watch=0")).verb == "list"
    for _ in range(2):
        with pytest.raises(InternalError):
            infos.derive(make_mocked_request("GET", "/apis/g/v1/watch"))
    assert len(infos) == 3, "a refused request keeps nothing"
