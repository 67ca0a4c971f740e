"""Kubernetes Status bodies as clients observe them: shape, wording, and errors rebuilt from a response."""

import pytest

from kubecommon import status


@pytest.mark.parametrize(("error", "code", "reason"), [
    pytest.param(status.BadRequest("x"), 400, "BadRequest", id="bad request"),
    pytest.param(status.Unauthorized(), 401, "Unauthorized", id="unauthorized"),
    pytest.param(status.Forbidden("x"), 403, "Forbidden", id="forbidden"),
    pytest.param(status.NotFound.for_path(), 404, "NotFound", id="not found"),
    pytest.param(status.Conflict("x"), 409, "Conflict", id="conflict"),
    pytest.param(status.Gone("x"), 410, "Expired", id="gone"),
    pytest.param(status.NotAcceptable.for_types(), 406, "NotAcceptable", id="not acceptable"),
    pytest.param(status.ServiceUnavailable("x"), 503, "ServiceUnavailable", id="unavailable"),
    pytest.param(status.Timeout("slow"), 504, "Timeout", id="timeout"),
    pytest.param(status.InternalError.wrapping("boom"), 500, "InternalError", id="internal"),
])
def test_status_body_shape(error: status.StatusError, code: int, reason: str) -> None:
    body = error.to_dict()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["metadata"] == {}
    assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason
    rebuilt = status.status_error_from_dict(body, code)
    assert type(rebuilt) is type(error) and rebuilt.message == error.message


def test_metrics_server_not_found_wording() -> None:
    body = status.NotFound.for_object("pods", "metrics.k8s.io", "default/web-0").to_dict()
    assert body["message"] == 'pods.metrics.k8s.io "default/web-0" not found'
    assert body["details"] == {"name": "default/web-0", "group": "metrics.k8s.io", "kind": "pods"}


def test_forbidden_wording_matches_kube_apiserver() -> None:
    error = status.Forbidden.for_request(user="jane", verb="get", resource="pods", subresource="rps",
                                         group="custom.metrics.k8s.io", name="*", namespace="shop")
    assert error.message == ('pods.custom.metrics.k8s.io "*" is forbidden: User "jane" cannot get resource '
                             '"pods/rps" in API group "custom.metrics.k8s.io" in the namespace "shop"')
    cluster = status.Forbidden.for_request(user="jane", verb="list", resource="nodes", group="metrics.k8s.io")
    assert cluster.message.endswith('in API group "metrics.k8s.io" at the cluster scope')
    path = status.Forbidden.for_request(user="jane", verb="get", path="/metrics")
    assert path.message == 'forbidden: User "jane" cannot get path "/metrics"'


def test_forbidden_carries_the_authorizers_reason_after_a_colon() -> None:
    resource = status.Forbidden.for_request(user="jane", verb="list", resource="nodes", group="metrics.k8s.io",
                                            reason="no RBAC policy matched")
    assert resource.message.endswith('at the cluster scope: no RBAC policy matched')
    path = status.Forbidden.for_request(user="jane", verb="get", path="/metrics", reason="no RBAC policy matched")
    assert path.message == 'forbidden: User "jane" cannot get path "/metrics": no RBAC policy matched'


@pytest.mark.parametrize(("code", "kind"), [
    pytest.param(400, status.BadRequest, id="400"), pytest.param(401, status.Unauthorized, id="401"),
    pytest.param(403, status.Forbidden, id="403"), pytest.param(404, status.NotFound, id="404"),
    pytest.param(405, status.MethodNotAllowed, id="405"), pytest.param(406, status.NotAcceptable, id="406"),
    pytest.param(409, status.Conflict, id="409 is Conflict, not AlreadyExists"),
    pytest.param(410, status.Gone, id="410"), pytest.param(415, status.UnsupportedMediaType, id="415"),
    pytest.param(422, status.Invalid, id="422"), pytest.param(429, status.TooManyRequests, id="429"),
    pytest.param(500, status.InternalError, id="500"), pytest.param(503, status.ServiceUnavailable, id="503"),
    pytest.param(504, status.Timeout, id="504"),
])
def test_non_status_body_maps_by_code(code: int, kind: type[status.StatusError]) -> None:
    error = status.status_error_from_dict({"oops": 1}, code)
    assert type(error) is kind and error.code == code


def test_unknown_code_keeps_its_number() -> None:
    error = status.status_error_from_dict(None, 418)
    assert type(error) is status.StatusError and error.code == 418
    assert error.message == "the server responded with HTTP 418"
