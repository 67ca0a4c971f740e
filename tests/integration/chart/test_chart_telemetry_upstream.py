"""Alerts a platform engineer expects on the controller and its autoscalers, proven with the real
`promtool test rules` on the chart's rendered PrometheusRule:

* PromAutoscalerControllerDown: no controller replica is scraped at all (every pod gone, pending
  or unscrapable): nothing scales, yet PromAutoscalerControllerNoLeader cannot fire on series
  that do not exist (kube-prometheus' KubeControllerManagerDown, for our controller);
* PromAutoscalerMaxedOut: an autoscaler has run at its maxReplicas for 15 minutes, unless
  min = max (kubernetes-mixin's KubeHpaMaxedOut, which reads kube-state-metrics and so never sees
  a PromAutoscaler);
* PromAutoscalerMetricUnavailable: an autoscaler has a metric target but no value for it for
  15 minutes (the metric cannot be read: it is not scaled on it), except while its target sits at
  0 replicas (scaling disabled, nothing is read);
* PromAutoscalerControllerSyncsFailing counts a stored invalid spec's syncs (result="blocked",
  error="spec"), as its description says, and only PromAutoscalers' syncs: it sends the reader to
  `kubectl get promautoscalers`, where a failing preview of a native HPA is not to be found.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.chart.conftest import NAMESPACE, Rendered
from tests.integration.chart.promtool import assert_alert_fires, rule_groups

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MONITORING = {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}
NS = f'namespace="{NAMESPACE}"'
OTHER_NS = 'namespace="elsewhere"'
P = "prom_autoscaler_controller_"
OBJ = 'kind="PromAutoscaler",name="web"'
METRIC = (f'{OBJ},metric_index="0",metric_name="queue_messages_ready",metric_type="External",'
          'target_type="AverageValue"')


def _series(name: str, labels: str, values: str, namespace: str = NS) -> dict[str, str]:
    return {"series": f"{P}{name}{{{namespace},pod=\"c-1\",{labels}}}", "values": values}


def _bounds(current: int, low: int, high: int, namespace: str = NS, kind: str = "PromAutoscaler") -> list[dict[str, str]]:
    obj = f'kind="{kind}",name="web"'
    return [_series(name, obj, f"{n}x30", namespace) for name, n in (("current_replicas", current),
                                                                     ("min_replicas", low), ("max_replicas", high))]


# (alert, input series, minutes to evaluate at, expected alert labels; [] = must stay quiet)
ALERT_CASES = [
    pytest.param("PromAutoscalerControllerDown", [], 10, [{"namespace": NAMESPACE, "severity": "critical"}],
                 id="controller down: no series at all"),
    pytest.param("PromAutoscalerControllerDown",
                 [{"series": f'{P}leader{{{NS},pod="c-1"}}', "values": "1x20"}], 10, [], id="controller scraped"),
    pytest.param("PromAutoscalerControllerDown",
                 [{"series": f'{P}leader{{{NS},pod="c-1"}}', "values": "1x2"}], 15,
                 [{"namespace": NAMESPACE, "severity": "critical"}], id="controller gone after 2 minutes"),
    pytest.param("PromAutoscalerMaxedOut", _bounds(10, 2, 10), 20,
                 [{"namespace": NAMESPACE, "kind": "PromAutoscaler", "name": "web", "severity": "warning"}],
                 id="runs at its max for 15 minutes"),
    pytest.param("PromAutoscalerMaxedOut", _bounds(9, 2, 10), 20, [], id="below its max"),
    pytest.param("PromAutoscalerMaxedOut", _bounds(5, 5, 5), 20, [], id="min = max: pinned on purpose"),
    pytest.param("PromAutoscalerMaxedOut", _bounds(10, 2, 10, OTHER_NS), 20, [], id="another release's autoscaler"),
    pytest.param("PromAutoscalerMaxedOut", _bounds(10, 2, 10, kind="HorizontalPodAutoscaler"), 20, [],
                 id="a previewed native HPA: kube-state-metrics' KubeHpaMaxedOut covers it"),
    pytest.param("PromAutoscalerMetricUnavailable",
                 [_series("metric_target", METRIC, "10x30"), _series("current_replicas", OBJ, "3x30")], 20,
                 [{"namespace": NAMESPACE, "kind": "PromAutoscaler", "name": "web", "metric_index": "0",
                   "metric_name": "queue_messages_ready", "metric_type": "External", "target_type": "AverageValue",
                   "severity": "warning"}], id="a target without a value for 15 minutes"),
    pytest.param("PromAutoscalerMetricUnavailable",
                 [_series("metric_target", METRIC, "10x30"), _series("metric_value", METRIC, "35x30"),
                  _series("current_replicas", OBJ, "3x30")], 20, [], id="value read"),
    pytest.param("PromAutoscalerMetricUnavailable",
                 [_series("metric_target", METRIC, "10x30"), _series("current_replicas", OBJ, "0x30")], 20, [],
                 id="target at 0 replicas: scaling disabled, nothing to read"),
    pytest.param("PromAutoscalerControllerSyncsFailing",
                 [_series("reconciliations_total", 'kind="PromAutoscaler",result="unchanged",action="none",'
                          'error="none"', "0+10x40"),
                  _series("reconciliations_total", 'kind="PromAutoscaler",result="blocked",action="none",'
                          'error="spec"', "0+5x40")],
                 30, [{"namespace": NAMESPACE, "severity": "warning"}], id="a third of syncs on an invalid spec"),
    pytest.param("PromAutoscalerControllerSyncsFailing",
                 [_series("reconciliations_total", 'kind="PromAutoscaler",result="unchanged",action="none",'
                          'error="none"', "0+10x40"),
                  _series("reconciliations_total", 'kind="HorizontalPodAutoscaler",result="blocked",action="none",'
                          'error="internal"', "0+10x40")],
                 30, [], id="previewed native HPAs failing: no PromAutoscaler to look at, the built-in HPA says so"),
]


@pytest.mark.parametrize(("alert", "series", "minutes", "expected"), ALERT_CASES)
def test_alert_fires_only_on_trouble(quick_render: Callable[..., Rendered], tmp_path: Path, alert: str,
                                     series: list[dict[str, str]], minutes: int,
                                     expected: list[dict[str, str]]) -> None:
    assert_alert_fires(quick_render(MONITORING), tmp_path, alert=alert, series=series, minutes=minutes,
                       expected=expected)


def test_new_alerts_can_be_disabled_by_name(quick_render: Callable[..., Rendered]) -> None:
    names = ["PromAutoscalerControllerDown", "PromAutoscalerMaxedOut", "PromAutoscalerMetricUnavailable"]
    everything = {r["alert"] for g in rule_groups(quick_render(MONITORING)) for r in g["rules"]}
    fewer = {r["alert"] for g in rule_groups(quick_render({**MONITORING, "prometheusRule": {
        "enabled": True, "disabled": names}})) for r in g["rules"]}
    assert everything - fewer == set(names)
