"""Authentication and RBAC: client-certificate user, service-account tokens, TokenReview and
SubjectAccessReview answered from stored Roles and bindings."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.fixtures.standin import CERT_USER, CONTEXT_CERT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _sar(authz, user: str, namespace: str, groups: list[str] | None = None) -> dict:
    review = authz.create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups or [], "resourceAttributes": {
            "namespace": namespace, "verb": "list", "resource": "pods"}}})
    return review.status.to_dict()


def _pod_reader(namespace: str, subject: dict) -> list[dict]:
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "pod-reader", "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "read-pods", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
         "subjects": [subject]},
    ]


def test_client_certificate_user_is_denied_then_allowed_by_a_rolebinding(kube_standin,
                                                                         standin_namespace):
    denied = kube_standin.kubectl("get", "pods", "-n", standin_namespace, context=CONTEXT_CERT,
                                  check=False)
    assert denied.returncode == 1
    assert (f'Error from server (Forbidden): pods is forbidden: User "{CERT_USER}" cannot list '
            f'resource "pods" in API group "" in the namespace "{standin_namespace}"') in denied.stderr
    kube_standin.apply(*_pod_reader(standin_namespace, {"kind": "Group", "name": "standin:developers",
                                                        "apiGroup": "rbac.authorization.k8s.io"}))
    allowed = kube_standin.kubectl("get", "pods", "-n", standin_namespace, context=CONTEXT_CERT)
    assert "No resources found" in allowed.stderr
    other = kube_standin.kubectl("get", "pods", "-n", "default", context=CONTEXT_CERT, check=False)
    assert "Forbidden" in other.stderr


def test_subject_access_review_follows_rbac(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        authz = client.AuthorizationV1Api(api_client)
        assert _sar(authz, "alice", standin_namespace)["allowed"] is False
        kube_standin.apply(*_pod_reader(standin_namespace, {
            "kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}))
        status = _sar(authz, "alice", standin_namespace)
        assert status["allowed"] is True
        assert status["reason"] == (f'RBAC: allowed by RoleBinding "read-pods/{standin_namespace}" '
                                    'of Role "pod-reader" to User "alice"')
        assert _sar(authz, "alice", "default")["allowed"] is False
        assert _sar(authz, "anyone", "default", ["system:masters"])["allowed"] is True


def test_service_account_token_and_token_review(kube_standin, standin_namespace, tmp_path):
    kubeconfig = kube_standin.service_account_kubeconfig(tmp_path / "sa.kubeconfig",
                                                         standin_namespace, "robot")
    import yaml
    token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    with kube_standin.api_client() as api_client:
        authn = client.AuthenticationV1Api(api_client)
        review = authn.create_token_review({"apiVersion": "authentication.k8s.io/v1",
                                            "kind": "TokenReview", "spec": {"token": token}})
        assert review.status.authenticated is True
        assert review.status.user.username == f"system:serviceaccount:{standin_namespace}:robot"
        assert f"system:serviceaccounts:{standin_namespace}" in review.status.user.groups
        bad = authn.create_token_review({"spec": {"token": "not-a-token"}})
        assert bad.status.authenticated is False
    out = kube_standin.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig)
    assert json.loads(out.stdout)["status"]["userInfo"]["username"] == \
        f"system:serviceaccount:{standin_namespace}:robot"


def test_unknown_token_is_401(kube_standin):
    import urllib.request
    import ssl
    ctx = ssl.create_default_context(cafile=str(kube_standin.ca_file))
    req = urllib.request.Request(f"{kube_standin.url}/api/v1/namespaces",
                                 headers={"Authorization": "Bearer nope"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, context=ctx, timeout=5)
    assert err.value.code == 401
    assert json.loads(err.value.read())["reason"] == "Unauthorized"


def test_kubectl_auth_can_i_uses_rbac(kube_standin, standin_namespace):
    def can_i(*args: str) -> str:
        out = kube_standin.kubectl("auth", "can-i", *args, "-n", standin_namespace, check=False)
        return out.stdout.strip()
    assert can_i("list", "pods", "--as", "carol") == "no"
    kube_standin.kubectl("create", "role", "reader", "--verb=list", "--resource=pods",
                         "-n", standin_namespace)
    kube_standin.kubectl("create", "rolebinding", "carol-reads", "--role=reader", "--user=carol",
                         "-n", standin_namespace)
    assert can_i("list", "pods", "--as", "carol") == "yes"
    assert can_i("delete", "pods", "--as", "carol") == "no"
