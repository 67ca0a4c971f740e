"""The chart's Grafana dashboard as kube-prometheus-stack's Grafana sidecar finds it: with
grafanaDashboard.enabled a ConfigMap labelled `grafana_dashboard: "1"` (or the sidecar label the user
sets) holds the dashboard JSON byte for byte, in the release namespace or the one given; off by
default; the schema refuses an unknown key. That its queries answer is tested against the running
components in tests/integration/controller/test_dashboard_live.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.integration.chart.conftest import FULLNAME, NAMESPACE, Helm, Rendered
from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

DASHBOARD = REPO / "charts" / "prom-autoscaler" / "dashboards" / "prom-autoscaler.json"


def _dashboards(rendered: Rendered) -> list[dict[str, object]]:
    return [o for o in rendered.all("ConfigMap") if o["metadata"]["name"] == f"{FULLNAME}-dashboard"]


def test_dashboard_configmap_carries_the_sidecar_label_and_the_json(quick_render: Callable[..., Rendered]) -> None:
    assert _dashboards(quick_render()) == [], "off by default"
    [cm] = _dashboards(quick_render({"grafanaDashboard": {"enabled": True}}))
    assert cm["metadata"]["namespace"] == NAMESPACE
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    [(key, text)] = cm["data"].items()
    assert key.endswith(".json") and text == DASHBOARD.read_text().rstrip("\n")
    dashboard = json.loads(text)
    assert dashboard["uid"] == "prom-autoscaler" and len(dashboard["panels"]) >= 20


def test_dashboard_namespace_labels_and_annotations(quick_render: Callable[..., Rendered]) -> None:
    [cm] = _dashboards(quick_render({"grafanaDashboard": {
        "enabled": True, "namespace": "grafana", "labels": {"grafana_dashboard": "", "team": "platform"},
        "annotations": {"grafana_folder": "Autoscaling"}}}))
    assert cm["metadata"]["namespace"] == "grafana"
    assert {k: cm["metadata"]["labels"][k] for k in ("grafana_dashboard", "team")} == \
        {"grafana_dashboard": "", "team": "platform"}
    assert cm["metadata"]["annotations"]["grafana_folder"] == "Autoscaling"


def test_schema_refuses_an_unknown_dashboard_key(helm: Helm) -> None:
    result = helm.template(sets=["grafanaDashboard.enabled=true", "grafanaDashboard.folder=x"])
    assert result.returncode != 0 and "grafanaDashboard" in result.output and "folder" in result.output, result.output
