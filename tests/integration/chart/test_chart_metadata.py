"""customLabels and customAnnotations ("on every object") reach every object the chart renders, the
pods included, as the prometheus-adapter chart puts customAnnotations on its pods: admission
policies that require an annotation on pods would otherwise reject them and the install half-works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration.chart.conftest import Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CUSTOM = {"customLabels": {"cost-center": "platform"}, "customAnnotations": {"example.com/owner": "team-a"}}


def _metadata(rendered: Rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what, metadata) of every rendered object and of every Deployment's pod template."""
    for obj in rendered.objects:
        what = f"{obj['kind']} {obj['metadata']['name']}"
        yield what, obj["metadata"]
        if obj["kind"] == "Deployment":
            yield f"pods of {what}", obj["spec"]["template"]["metadata"]


@pytest.mark.parametrize("values", [
    pytest.param({}, id="defaults"),
    pytest.param({"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                  "rules": {"existing": "my-rules"}}, id="monitoring-existing-rules"),
])
def test_custom_labels_and_annotations_on_every_object(quick_render: Callable[..., Rendered],
                                                       values: dict[str, Any]) -> None:
    rendered = quick_render({**CUSTOM, **values})
    missing = [what for what, meta in _metadata(rendered)
               if (meta.get("labels") or {}).get("cost-center") != "platform"
               or (meta.get("annotations") or {}).get("example.com/owner") != "team-a"]
    assert not missing


@pytest.mark.parametrize(("values", "component"), [
    pytest.param({"podAnnotations": {"example.com/owner": "team-b"}}, "metrics-adapter", id="adapter"),
    pytest.param({"controller": {"podAnnotations": {"example.com/owner": "team-b"}}}, "controller", id="controller"),
])
def test_pod_annotations_win_over_custom_annotations(quick_render: Callable[..., Rendered], values: dict[str, Any],
                                                     component: str) -> None:
    rendered = quick_render({**CUSTOM, **values})
    [deployment] = [d for d in rendered.all("Deployment")
                    if d["metadata"]["labels"]["app.kubernetes.io/component"] == component]
    assert deployment["spec"]["template"]["metadata"]["annotations"]["example.com/owner"] == "team-b"


def _nulls(node: Any, path: str) -> Iterator[str]:
    if node is None:
        yield path
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _nulls(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _nulls(value, f"{path}[{index}]")


@pytest.mark.parametrize("values", [
    pytest.param({}, id="defaults"),
    pytest.param({"rules": {"existing": "my-rules"}}, id="existing-rules"),
    pytest.param({"tls": {"enable": False, "insecureSkipTLSVerify": True}}, id="insecure-tls"),
    pytest.param({"controller": {"metricsSecure": False}, "serviceMonitor": {"enabled": True},
                  "prometheusRule": {"enabled": True}}, id="plain-controller-monitoring"),
    pytest.param({"adapter": {"enabled": False}}, id="controller-only"),
])
def test_no_null_fields(quick_render: Callable[..., Rendered], values: dict[str, Any]) -> None:
    """A field rendered empty is null, which kubeconform/kubeval -strict reject (an empty map is not)."""
    found = [path for obj in quick_render(values).objects
             for path in _nulls(obj, f"{obj['kind']} {obj['metadata']['name']}")]
    assert not found
