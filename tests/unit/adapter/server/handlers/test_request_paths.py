"""How the custom and external handlers read request paths (custom-metrics-apiserver's routes)."""

from __future__ import annotations

import pytest

from adapter.rules.resources import GroupResource
from adapter.server.handlers import ParsedRequests, custom_metrics, external_metrics
from adapter.services import errors
from kubecommon import status
from kubecommon.selectors import parse_selector


@pytest.mark.parametrize(("tail", "expected"), [
    pytest.param("namespaces/default/pods/web-1/http_requests",
                 (GroupResource("", "pods"), "default", "web-1", "http_requests"), id="namespaced object"),
    pytest.param("namespaces/default/pods/*/http_requests",
                 (GroupResource("", "pods"), "default", None, "http_requests"), id="namespaced wildcard"),
    pytest.param("nodes/node-a/node_gigawatts",
                 (GroupResource("", "nodes"), None, "node-a", "node_gigawatts"), id="cluster-scoped object"),
    pytest.param("nodes/*/node_gigawatts",
                 (GroupResource("", "nodes"), None, None, "node_gigawatts"), id="cluster-scoped wildcard"),
    pytest.param("namespaces/prod/metrics/queue_depth",
                 (GroupResource("", "namespaces"), None, "prod", "queue_depth"), id="the namespace object"),
    pytest.param("namespaces/shop/deployments.apps/web/rps",
                 (GroupResource("apps", "deployments"), "shop", "web", "rps"), id="group-qualified resource"),
    pytest.param("namespaces/shop/pod/web/rps",
                 (GroupResource("", "pods"), "shop", "web", "rps"), id="singular resource normalised"),
])
def test_custom_paths(tail: str, expected: tuple[object, ...]) -> None:
    request = custom_metrics.parse_path(tail, None, None)
    assert (request.resource, request.namespace, request.name, request.metric) == expected


@pytest.mark.parametrize("tail", [
    pytest.param("namespaces/ns/foo", id="three parts under namespaces"),
    pytest.param("pods/web", id="two parts"),
    pytest.param("pods", id="one part"),
    pytest.param("namespaces/ns/pods/web", id="four parts not metrics"),
    pytest.param("namespaces/ns/pods/web/m/extra", id="six parts"),
    pytest.param("namespaces//pods/web/m", id="empty namespace"),
    pytest.param("pods//m", id="empty name"),
])
def test_malformed_custom_paths_are_400_invalid_request_path(tail: str) -> None:
    with pytest.raises(errors.InvalidRequestPath) as caught:
        custom_metrics.parse_path(tail, None, None)
    assert (caught.value.code, caught.value.message) == (400, "invalid request path")


def test_custom_selectors_are_parsed_and_bad_ones_are_400() -> None:
    request = custom_metrics.parse_path("namespaces/ns/pods/*/m", "app=web", "verb in (GET,PUT)")
    assert request.label_selector == parse_selector("app=web")
    assert str(request.metric_selector) == "verb in (GET,PUT)"
    with pytest.raises(status.BadRequest, match="found 'bar', expected: ',' or 'end of string'"):
        custom_metrics.parse_path("namespaces/ns/pods/*/m", "foo=x bar", None)


def test_external_path_and_selector() -> None:
    request = external_metrics.parse_path("namespaces/default/queue_depth", "queue=q1")
    assert (request.namespace, request.metric, str(request.metric_selector)) == ("default", "queue_depth", "queue=q1")


@pytest.mark.parametrize("tail", ["namespaces/default", "queue_depth", "namespaces/default/a/b", "namespaces//m"])
def test_other_external_paths_are_404(tail: str) -> None:
    with pytest.raises(status.NotFound, match="the server could not find the requested resource"):
        external_metrics.parse_path(tail, None)


def test_field_selector_naming_another_object_is_400() -> None:
    with pytest.raises(status.BadRequest, match="^fieldSelector metadata.name doesn't match requested name$"):
        custom_metrics.parse_path("namespaces/ns/pods/web-0/m", None, None, "metadata.name=web-1")
    request = custom_metrics.parse_path("namespaces/ns/pods/web-0/m", None, None, "metadata.name=web-0")
    assert request.name == "web-0"


def test_a_repeated_request_is_parsed_once_and_a_bad_one_every_time() -> None:
    parsed = ParsedRequests(custom_metrics.parse_path, 2)
    hpa = ("namespaces/shop/pods/*/rps", "app=web,tier in (front)", None, None)
    first = parsed.parse(hpa)
    assert parsed.parse(hpa) is first, "the same request: the kept answer"
    assert first.label_selector == parse_selector("app=web,tier in (front)")
    other = parsed.parse(("namespaces/shop/pods/*/rps", "app=db", None, None))
    assert other.label_selector == parse_selector("app=db") and other is not first
    bad = ("namespaces/shop/pods/*/rps", "app in (", None, None)
    for _ in range(2):
        with pytest.raises(errors.BadSelector):
            parsed.parse(bad)
    assert len(parsed) == 2, "a refused request keeps nothing"


def test_a_repeated_external_request_is_parsed_once_and_a_bad_one_every_time() -> None:
    parsed = ParsedRequests(external_metrics.parse_path, 2)
    keda = ("namespaces/shop/queue_depth", "queue=orders")
    first = parsed.parse(keda)
    assert parsed.parse(keda) is first
    assert first.metric_selector == parse_selector("queue=orders")
    for _ in range(2):
        with pytest.raises(errors.BadSelector):
            parsed.parse(("namespaces/shop/queue_depth", "queue in ("))
        with pytest.raises(status.NotFound):
            parsed.parse(("namespaces/shop", None))
    assert len(parsed) == 1, "a refused request keeps nothing"
