"""Every error case of the metrics APIs, through aggregation: the HTTP code and the whole
metav1.Status body (custom-metrics-apiserver / metrics-server wording), and what kubectl prints."""

from __future__ import annotations

import pytest

from .conftest import Stack, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]  # incl. stack start

CM = "/apis/custom.metrics.k8s.io/v1beta1"
CM2 = "/apis/custom.metrics.k8s.io/v1beta2"
EM = "/apis/external.metrics.k8s.io/v1beta1"
RM = "/apis/metrics.k8s.io/v1beta1"
WEB = "web-7d9f8-abcde"


def _assert_status(stack: Stack, path: str, code: int, reason: str, message: str,
                   details: dict[str, str] | None = None, *, accept: str = "application/json") -> None:
    got_code, headers, body = stack.api(path, accept=accept)
    assert got_code == code, body
    assert headers["Content-Type"].startswith("application/json")
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code}
    if details is not None:
        expected["details"] = details
    if code == 500:
        body.pop("details", None)
    assert body == expected


@pytest.mark.parametrize(("path", "code", "reason", "message"), [
    pytest.param(f"{CM}/namespaces/shop/pods/nope-0/http_requests_per_second", 404, "NotFound",
                 "the server could not find the metric http_requests_per_second for pods nope-0",
                 id="object without data"),
    pytest.param(f"{CM2}/namespaces/shop/pods/{WEB}/http_requests_per_second?metricLabelSelector=method%3DDELETE",
                 404, "NotFound", "the server could not find the metric http_requests_per_second for pods "
                 f"{WEB} with selector method=DELETE", id="metric selector matches nothing"),
    pytest.param(f"{CM}/namespaces/shop/pods/*/nope", 404, "NotFound",
                 "the server could not find the metric nope for pods", id="unknown metric"),
    pytest.param(f"{CM}/nodes/node-a/http_requests_per_second", 404, "NotFound",
                 "the server could not find the metric http_requests_per_second for nodes",
                 id="metric of another resource"),
    pytest.param(f"{CM}/namespaces/shop/pods/*/app_sessions_active?labelSelector=app%3Dnothing", 404,
                 "NotFound", "the server could not find the metric app_sessions_active for pods",
                 id="selector picks no object"),
    pytest.param(f"{CM}/namespaces/shop/foo", 400, "BadRequest", "invalid request path", id="malformed path"),
    pytest.param(f"{CM2}/namespaces/shop/pods/*/app_sessions_active?labelSelector=app+web", 400, "BadRequest",
                 "found 'web', expected: in, notin, =, ==, !=, gt, lt", id="bad labelSelector"),
    pytest.param(f"{CM}/namespaces/shop/pods/{WEB}/app_sessions_active?fieldSelector=metadata.name%3Dother",
                 400, "BadRequest", "fieldSelector metadata.name doesn't match requested name",
                 id="fieldSelector names another object"),
    pytest.param(f"{EM}/namespaces/shop/nope", 404, "NotFound",
                 "the server could not find the metric nope for namespaces", id="unknown external metric"),
    pytest.param(f"{EM}/namespaces/shop", 404, "NotFound", "the server could not find the requested resource",
                 id="external path without metric"),
])
def test_metric_errors(stack: Stack, path: str, code: int, reason: str, message: str) -> None:
    _assert_status(stack, path, code, reason, message)


@pytest.mark.parametrize("query", [
    pytest.param("metricLabelSelector=code%3E200", id="gt operator PromQL cannot express"),
    pytest.param("metricLabelSelector=app.kubernetes.io%2Fname%3Dweb", id="key that is no Prometheus label"),
    pytest.param("metricLabelSelector=a%3D%3D%3D", id="unparsable metric selector"),
])
def test_bad_metric_label_selectors_are_400_not_500(stack: Stack, query: str) -> None:
    code, _, body = stack.api(f"{CM}/namespaces/shop/pods/{WEB}/http_requests_per_second?{query}")
    assert (code, body["reason"], body["code"]) == (400, "BadRequest", 400)


def test_resource_metrics_for_unknown_objects(stack: Stack) -> None:
    _assert_status(stack, f"{RM}/namespaces/shop/pods/nope", 404, "NotFound", 'pods "nope" not found',
                   {"name": "nope", "kind": "pods"})
    _assert_status(stack, f"{RM}/nodes/nope", 404, "NotFound", 'nodes "nope" not found',
                   {"name": "nope", "kind": "nodes"})


@pytest.mark.standin_only("creates a Running pod in the stand-in without a kubelet")
def test_running_pod_without_metrics_is_404_for_its_pod_metrics(stack: Stack) -> None:
    stack.standin.create([{"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "ghost-0", "namespace": "shop", "labels": {"app": "ghost"}},
                           "spec": {"containers": [{"name": "app", "image": "app"}]},
                           "status": {"phase": "Running"}}])
    try:
        path = f"{RM}/namespaces/shop/pods/ghost-0"
        wait_until(lambda: stack.api(path)[2].get("message") != 'pods "ghost-0" not found', timeout=10,
                   what="the adapter's pod cache to see ghost-0")
        _assert_status(stack, path, 404, "NotFound", 'podmetrics.metrics.k8s.io "shop/ghost-0" not found',
                       {"name": "shop/ghost-0", "group": "metrics.k8s.io", "kind": "podmetrics"})
        result = stack.kubectl("top", "pod", "ghost-0", "-n", "shop", check=False)
        assert result.returncode != 0
        assert 'podmetrics.metrics.k8s.io "shop/ghost-0" not found' in result.stderr
    finally:
        stack.kubectl("delete", "pod", "ghost-0", "-n", "shop", "--wait=false")


def test_kubectl_prints_reason_and_message(stack: Stack) -> None:
    result = stack.raw(f"{CM}/namespaces/shop/pods/nope-0/http_requests_per_second")
    assert result.returncode == 1
    assert result.stderr.strip() == ("Error from server (NotFound): the server could not find the metric "
                                     "http_requests_per_second for pods nope-0")


def test_protobuf_only_accept_is_406(stack: Stack) -> None:
    code, _, body = stack.api(f"{CM}/namespaces/shop/pods/{WEB}/app_sessions_active",
                              accept="application/vnd.kubernetes.protobuf")
    assert (code, body["reason"]) == (406, "NotAcceptable")
    code, _, _ = stack.api(f"{CM}/namespaces/shop/pods/{WEB}/app_sessions_active",
                           accept="application/vnd.kubernetes.protobuf, */*")
    assert code == 200, "what kubectl top and the HPA send"
