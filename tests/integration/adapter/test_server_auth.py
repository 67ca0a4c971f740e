"""Delegated authentication and authorization of the real adapter process (TLS, the stand-in's
TokenReview/SubjectAccessReview/RBAC, the extension-apiserver-authentication ConfigMap)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.fixtures.adapter import RunningAdapter, start_adapter

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

NS = "adapter-auth"
RULES = """
rules:
- seriesQuery: 'http_requests_in_flight{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
POD_METRIC = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/web-7d9f8-abcde/http_requests_in_flight"
DISCOVERY = "/apis/custom.metrics.k8s.io/v1beta1"


def _token(kubeconfig: Path) -> str:
    return yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]


def _binding(kind: str, name: str, role_kind: str, role: str, sa: str, namespace: str | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NS}]}


def _cluster_role(name: str, rules: list[dict]) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": rules}


@dataclass
class Stack:
    adapter: RunningAdapter
    reader_token: str
    denied_token: str
    admin_token: str
    front_proxy: tuple[Path, Path]
    cert_user: tuple[Path, Path]


@pytest.fixture(scope="module")
def stack(kube_standin, prometheus, tmp_path_factory) -> Stack:
    work = tmp_path_factory.mktemp("adapter-auth")
    own = kube_standin.service_account_kubeconfig(work / "adapter.kubeconfig", NS, "prom-adapter")
    reader = kube_standin.service_account_kubeconfig(work / "reader.kubeconfig", NS, "metrics-reader")
    denied = kube_standin.service_account_kubeconfig(work / "denied.kubeconfig", NS, "nobody")
    kube_standin.apply(
        # what every aggregated server's own identity needs (spec §1.9)
        _binding("ClusterRoleBinding", "adapter-auth:auth-delegator", "ClusterRole", "system:auth-delegator",
                 "prom-adapter"),
        _binding("RoleBinding", "adapter-auth:auth-reader", "Role", "extension-apiserver-authentication-reader",
                 "prom-adapter", "kube-system"),
        _cluster_role("adapter-auth:lister", [{"apiGroups": [""], "resources": ["pods", "nodes", "namespaces"],
                                               "verbs": ["get", "list", "watch"]}]),
        _binding("ClusterRoleBinding", "adapter-auth:lister", "ClusterRole", "adapter-auth:lister", "prom-adapter"),
        # the consumer: may read custom metrics and scrape /metrics
        _cluster_role("adapter-auth:reader", [
            {"apiGroups": ["custom.metrics.k8s.io"], "resources": ["*"], "verbs": ["get", "list"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
        _binding("ClusterRoleBinding", "adapter-auth:reader", "ClusterRole", "adapter-auth:reader", "metrics-reader"),
    )
    with start_adapter(work / "adapter", prometheus_url=prometheus.url, kubeconfig=own, rules=RULES) as adapter:
        yield Stack(adapter=adapter, reader_token=_token(reader), denied_token=_token(denied),
                    admin_token=kube_standin.admin_token, front_proxy=kube_standin.front_proxy_client,
                    cert_user=kube_standin.cert_user)


def _status(reply, code: int, reason: str) -> dict:
    assert reply.status == code, reply.text
    assert reply.headers["Content-Type"].startswith("application/json")
    body = reply.json()
    assert (body["kind"], body["status"], body["code"], body["reason"]) == ("Status", "Failure", code, reason)
    return body


def test_no_credentials_is_401(stack):
    _status(stack.adapter.request(POD_METRIC), 401, "Unauthorized")


def test_health_needs_no_credentials(stack):
    for path in ("/healthz", "/livez", "/readyz"):
        reply = stack.adapter.request(path)
        assert (reply.status, reply.text) == (200, "ok")


def test_rejected_token_is_401(stack):
    _status(stack.adapter.request(POD_METRIC, token="not-a-real-token"), 401, "Unauthorized")


def test_rbac_allows_the_reader(stack):
    reply = stack.adapter.request(POD_METRIC, token=stack.reader_token)
    assert reply.status == 200, reply.text
    (item,) = reply.json()["items"]
    assert item["describedObject"]["name"] == "web-7d9f8-abcde"


def test_rbac_denial_is_403_worded_like_kube_apiserver(stack):
    body = _status(stack.adapter.request(POD_METRIC, token=stack.denied_token), 403, "Forbidden")
    assert body["message"].startswith(
        'pods.custom.metrics.k8s.io "web-7d9f8-abcde" is forbidden: User '
        f'"system:serviceaccount:{NS}:nobody" cannot get resource "pods/http_requests_in_flight" '
        'in API group "custom.metrics.k8s.io" in the namespace "shop"')
    assert body["details"] == {"name": "web-7d9f8-abcde", "group": "custom.metrics.k8s.io", "kind": "pods"}


def test_discovery_is_allowed_for_any_authenticated_user(stack):
    """system:discovery (bound to system:authenticated) covers /apis/*, as in a real cluster."""
    reply = stack.adapter.request(DISCOVERY, token=stack.denied_token)
    assert reply.status == 200 and reply.json()["kind"] == "APIResourceList"


MASTERS = [("X-Remote-User", "mallory"), ("X-Remote-Group", "system:masters")]


def test_identity_headers_ignored_without_client_certificate(stack):
    _status(stack.adapter.request(POD_METRIC, headers=MASTERS), 401, "Unauthorized")


def test_identity_headers_ignored_with_a_non_front_proxy_certificate(stack):
    body = _status(stack.adapter.request(POD_METRIC, headers=MASTERS, cert=stack.cert_user), 403, "Forbidden")
    assert 'User "standin-user"' in body["message"]  # the certificate's identity, not the headers'


def test_identity_headers_ignored_next_to_a_bearer_token(stack):
    body = _status(stack.adapter.request(POD_METRIC, headers=MASTERS, token=stack.denied_token), 403, "Forbidden")
    assert f"system:serviceaccount:{NS}:nobody" in body["message"]


def test_front_proxy_identity_is_authorized_by_rbac(stack):
    as_reader = [("X-Remote-User", f"system:serviceaccount:{NS}:metrics-reader"),
                 ("X-Remote-Group", "system:serviceaccounts")]
    assert stack.adapter.request(POD_METRIC, headers=as_reader, cert=stack.front_proxy).status == 200
    as_nobody = [("X-Remote-User", "nobody-in-particular")]
    body = _status(stack.adapter.request(POD_METRIC, headers=as_nobody, cert=stack.front_proxy), 403, "Forbidden")
    assert 'User "nobody-in-particular"' in body["message"]


def test_front_proxy_masters_skip_review(stack):
    assert stack.adapter.request(POD_METRIC, headers=MASTERS, cert=stack.front_proxy).status == 200


def test_metrics_endpoint_for_an_allowed_scraper(stack):
    stack.adapter.request(DISCOVERY, token=stack.reader_token)
    stack.adapter.request(POD_METRIC, token=stack.denied_token)
    reply = stack.adapter.request("/metrics", token=stack.reader_token)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
    text = reply.text
    assert 'prom_autoscaler_adapter_requests_total{code="403",group="custom.metrics.k8s.io",verb="get",' \
           'version="v1beta1"}' in text
    for family in ("prom_autoscaler_adapter_request_duration_seconds_bucket",
                   "prom_autoscaler_adapter_prometheus_request_duration_seconds_bucket",
                   "prom_autoscaler_adapter_relist_last_duration_seconds",
                   'prom_autoscaler_adapter_registry_size{kind="custom"} 2.0',  # pods/ and namespaces/
                   'prom_autoscaler_adapter_watch_cache_objects{resource="pods"}',
                   "prom_autoscaler_adapter_served_sample_age_seconds_count"):
        assert family in text, family
    _status(stack.adapter.request("/metrics", token=stack.denied_token), 403, "Forbidden")


@pytest.mark.parametrize("raw", [
    pytest.param(b"GET /apis HTTP/1.1\r\nHost: x\r\nConnection: close\r\nBad Header: y\r\n\r\n",
                 id="a header name with a space"),
    pytest.param(b"GET /apis HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
                 id="a header line over the 64 KiB limit"),
])
def test_a_request_the_parser_refuses_before_authentication_gets_a_status_without_traceback(stack, raw):
    import json
    import socket

    context = stack.adapter.ssl_context()
    with socket.create_connection(("127.0.0.1", stack.adapter.port), timeout=10) as sock, \
            context.wrap_socket(sock, server_hostname="localhost") as tls:
        tls.sendall(raw)
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"400" and b"application/json" in head, head
    status = json.loads(body)
    assert (status["kind"], status["status"], status["code"], status["reason"]) == ("Status", "Failure", 400, "BadRequest")
    assert b"Traceback" not in body
    assert "Traceback" not in stack.adapter.log_file.read_text()
