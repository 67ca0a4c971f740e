"""Which manifests a backtest accepts, and what a user is told about the others."""

from __future__ import annotations

from typing import Any

import pytest

from controller.algorithm.spec import SourceType
from controller.backtest.spec_file import SpecError, spec_from_manifest

CRD: dict[str, Any] = {
    "apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
    "metadata": {"name": "web-scaler", "namespace": "shop"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "maxReplicas": 10, "syncPeriodSeconds": 30,
             "metrics": [{"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                                  "target": {"type": "AverageValue", "averageValue": "1500m"}}}]},
}
HPA = {**CRD, "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
       "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "api"}, "minReplicas": 3, "maxReplicas": 5}}


def test_a_prom_autoscaler_keeps_its_sync_period_selectors_and_milli_targets() -> None:
    spec = spec_from_manifest(CRD)
    assert (spec.name, spec.namespace, spec.target_kind, spec.target_name, spec.sync_period) == (
        "web-scaler", "shop", "Deployment", "web", 30.0)
    (metric,) = spec.autoscaler.metrics
    assert metric.target is not None and metric.target.average_value == 1500
    assert spec.metric_selectors == ("verb=GET",)


def test_an_hpa_without_metrics_gets_the_api_default_cpu_80_percent() -> None:
    spec = spec_from_manifest(HPA)
    (metric,) = spec.autoscaler.metrics
    assert (metric.type, metric.name, spec.autoscaler.min_replicas, spec.sync_period) == (SourceType.RESOURCE, "cpu", 3, 15.0)
    assert metric.target is not None and metric.target.average_utilization == 80


@pytest.mark.parametrize(("doc", "says"), [
    pytest.param([1, 2], "expected a YAML mapping", id="not a mapping"),
    pytest.param({**CRD, "kind": "Deployment"}, "is neither", id="another kind"),
    pytest.param({**CRD, "spec": {**CRD["spec"], "maxReplicas": None}}, "spec.maxReplicas", id="no maxReplicas"),
    pytest.param({**CRD, "spec": {**CRD["spec"], "metrics": [{"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "lots"}}}]}},
        "spec.metrics[0]", id="a quantity that does not parse"),
])
def test_a_manifest_that_cannot_be_replayed_names_the_problem(doc: object, says: str) -> None:
    with pytest.raises(SpecError, match=None) as caught:
        spec_from_manifest(doc, source="my.yaml")
    assert str(caught.value).startswith("my.yaml: ") and says in str(caught.value)
