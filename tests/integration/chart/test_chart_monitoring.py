"""The chart's Prometheus Operator objects: ServiceMonitors and the PrometheusRule.

- each ServiceMonitor selects exactly its component's Service, on a port that Service has, and the
  adapter's verifies the serving certificate with the chart's CA for `<svc>.<ns>.svc`; both send
  Prometheus' token over HTTPS, the controller's over plain HTTP with controller.metricsSecure=false;
- the PrometheusRule passes `promtool check rules`, and `promtool test rules` (the real promtool)
  shows each alert firing on the series that mean trouble and staying quiet on healthy ones,
  in the release namespace only.

That the metric names the rules use are the ones the running binaries expose is checked in
test_chart_controller_standin, which scrapes both.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.chart.conftest import FULLNAME, NAMESPACE, Rendered
from tests.integration.chart.promtool import assert_alert_fires, promtool, rule_groups

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CONTROLLER = f"{FULLNAME}-controller"
MONITORING = {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus"}},
              "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus"}}}
NS = f'namespace="{NAMESPACE}"'
OTHER_NS = 'namespace="elsewhere"'


def test_service_monitors_select_each_components_service(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render(MONITORING)
    for name, port, scheme in ((FULLNAME, "https", "https"), (CONTROLLER, "metrics", "https")):
        monitor = rendered.one("ServiceMonitor", name)
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
        spec = monitor["spec"]
        assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
        selected = [s["metadata"]["name"] for s in rendered.all("Service")
                    if all(s["metadata"]["labels"].get(k) == v for k, v in spec["selector"]["matchLabels"].items())]
        assert selected == [name]
        [endpoint] = spec["endpoints"]
        assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == (port, scheme, "/metrics")
        assert port in {p["name"] for p in rendered.one("Service", name)["spec"]["ports"]}
    tls = rendered.one("ServiceMonitor", FULLNAME)["spec"]["endpoints"][0]["tlsConfig"]
    assert tls == {"serverName": f"{FULLNAME}.{NAMESPACE}.svc",
                   "ca": {"secret": {"name": f"{FULLNAME}-tls", "key": "ca.crt"}}}


TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


# (controller values, the controller endpoint's scheme, bearer token file, tlsConfig)
CONTROLLER_SCRAPES = [
    pytest.param({}, "https", TOKEN, {"insecureSkipVerify": True}, id="secure: Prometheus' token over HTTPS"),
    pytest.param({"tls": {"existingSecret": "ctl-serving"}}, "https", TOKEN, {"insecureSkipVerify": True},
                 id="own certificate: no CA the chart knows, not verified"),
    pytest.param({"metricsSecure": False}, "http", None, None, id="metricsSecure=false: plain HTTP, no token"),
]


@pytest.mark.parametrize(("controller", "scheme", "token", "tls"), CONTROLLER_SCRAPES)
def test_controller_service_monitor_scrapes_as_the_port_serves(
        quick_render: Callable[..., Rendered], controller: dict[str, Any], scheme: str, token: str | None,
        tls: dict[str, Any] | None) -> None:
    [endpoint] = quick_render({**MONITORING, "controller": controller}).one("ServiceMonitor", CONTROLLER)["spec"][
        "endpoints"]
    assert (endpoint["scheme"], endpoint.get("bearerTokenFile"), endpoint.get("tlsConfig")) == (scheme, token, tls)


@pytest.mark.parametrize(("values", "monitors"), [
    pytest.param({}, set(), id="off by default"),
    pytest.param({**MONITORING, "controller": {"enabled": False}}, {FULLNAME}, id="adapter only"),
    pytest.param({**MONITORING, "adapter": {"enabled": False}}, {CONTROLLER}, id="controller only"),
])
def test_monitoring_objects_follow_the_switches(quick_render: Callable[..., Rendered], values: dict[str, Any],
                                                monitors: set[str]) -> None:
    rendered = quick_render(values)
    assert rendered.names("ServiceMonitor") == monitors
    assert bool(rendered.all("PrometheusRule")) is bool(monitors)


def _alerts(rendered: Rendered) -> set[str]:
    return {rule["alert"] for group in rule_groups(rendered) for rule in group["rules"]}


def test_rules_pass_promtool_check(quick_render: Callable[..., Rendered], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups(quick_render(MONITORING))}))
    result = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_disabled_alerts_are_left_out(quick_render: Callable[..., Rendered]) -> None:
    everything = _alerts(quick_render(MONITORING))
    fewer = _alerts(quick_render({**MONITORING, "prometheusRule": {
        "enabled": True, "disabled": ["PromAutoscalerReconcileLate", "PromAutoscalerAdapterDiscoveryStale"]}}))
    assert everything - fewer == {"PromAutoscalerReconcileLate", "PromAutoscalerAdapterDiscoveryStale"}
    unelected = _alerts(quick_render({**MONITORING, "controller": {"replicas": 1, "leaderElection": {"enabled": False}}}))
    assert "PromAutoscalerControllerNoLeader" not in unelected


def _lateness(le_counts: dict[str, str], namespace: str = NS) -> list[dict[str, str]]:
    return [{"series": f'prom_autoscaler_controller_reconciliation_lateness_seconds_bucket{{{namespace},le="{le}"}}',
             "values": values} for le, values in le_counts.items()]


# (alert, input series, minutes to evaluate at, expected alert labels; [] = must stay quiet)
ALERT_CASES = [
    pytest.param("PromAutoscalerAPIServiceUnavailable",
                 [{"series": 'aggregator_unavailable_apiservice{name="v1beta1.custom.metrics.k8s.io"}',
                   "values": "1x20"},
                  {"series": 'aggregator_unavailable_apiservice{name="v1beta1.custom.metrics.k8s.io2"}',
                   "values": "1x20"},
                  {"series": 'aggregator_unavailable_apiservice{name="v1.apps"}', "values": "1x20"}],
                 10, [{"name": "v1beta1.custom.metrics.k8s.io", "severity": "critical"}],
                 id="apiservice unavailable: ours only (dots are not wildcards)"),
    pytest.param("PromAutoscalerAPIServiceUnavailable",
                 [{"series": 'aggregator_unavailable_apiservice{name="v1beta1.external.metrics.k8s.io"}',
                   "values": "0x20"}], 10, [], id="apiservice available"),
    pytest.param("PromAutoscalerAdapterRelistFailing",
                 [{"series": f'prom_autoscaler_adapter_relist_failures_total{{{NS},pod="a-1"}}', "values": "0+1x40"},
                  {"series": f'prom_autoscaler_adapter_relist_failures_total{{{OTHER_NS},pod="z"}}',
                   "values": "0+1x40"}],
                 35, [{"namespace": NAMESPACE, "pod": "a-1", "severity": "warning"}], id="relists keep failing"),
    pytest.param("PromAutoscalerAdapterRelistFailing",
                 [{"series": f'prom_autoscaler_adapter_relist_failures_total{{{NS},pod="a-1"}}', "values": "3x40"}],
                 35, [], id="old failures only"),
    pytest.param("PromAutoscalerAdapterDiscoveryStale",
                 [{"series": f'prom_autoscaler_adapter_relist_last_success_timestamp_seconds{{{NS},pod="a-1"}}',
                   "values": "0x30"}],
                 20, [{"namespace": NAMESPACE, "pod": "a-1", "severity": "warning"}], id="no relist success"),
    pytest.param("PromAutoscalerAdapterDiscoveryStale",
                 [{"series": f'prom_autoscaler_adapter_relist_last_success_timestamp_seconds{{{NS},pod="a-1"}}',
                   "values": "0+60x30"}], 20, [], id="relists succeed every minute"),
    pytest.param("PromAutoscalerControllerSyncsFailing",
                 [{"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="unchanged"}', "values": "0+10x40"},
                  {"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="blocked"}', "values": "0+5x40"}],
                 30, [{"namespace": NAMESPACE, "severity": "warning"}], id="a third of syncs fail"),
    pytest.param("PromAutoscalerControllerSyncsFailing",
                 [{"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="unchanged"}', "values": "0+100x40"},
                  {"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="blocked"}', "values": "0+1x40"}],
                 30, [], id="one sync in a hundred fails"),
    pytest.param("PromAutoscalerControllerSyncsFailing",
                 [{"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="paused"}', "values": "0+10x40"},
                  {"series": f'prom_autoscaler_controller_reconciliations_total{{{NS},pod="c-1",kind="PromAutoscaler",'
                             'result="not_leader"}', "values": "0+10x40"}],
                 30, [], id="paused objects and lost leadership are not failures"),
    pytest.param("PromAutoscalerReconcileLate",
                 _lateness({"1": "0+1x40", "30": "0+2x40", "120": "0+10x40", "+Inf": "0+10x40"}),
                 30, [{"namespace": NAMESPACE, "severity": "warning"}], id="most syncs a minute late"),
    pytest.param("PromAutoscalerReconcileLate",
                 _lateness({"1": "0+10x40", "30": "0+10x40", "120": "0+10x40", "+Inf": "0+10x40"}),
                 30, [], id="syncs on time"),
    pytest.param("PromAutoscalerReconcileLate",
                 _lateness({"1": "0+1x40", "30": "0+2x40", "120": "0+10x40", "+Inf": "0+10x40"}, OTHER_NS),
                 30, [], id="another release's controller"),
    pytest.param("PromAutoscalerControllerNoLeader",
                 [{"series": f'prom_autoscaler_controller_leader{{{NS},pod="c-1"}}', "values": "0x20"},
                  {"series": f'prom_autoscaler_controller_leader{{{NS},pod="c-2"}}', "values": "0x20"}],
                 10, [{"namespace": NAMESPACE, "severity": "critical"}], id="nobody leads"),
    pytest.param("PromAutoscalerControllerNoLeader",
                 [{"series": f'prom_autoscaler_controller_leader{{{NS},pod="c-1"}}', "values": "0x20"},
                  {"series": f'prom_autoscaler_controller_leader{{{NS},pod="c-2"}}', "values": "1x20"}],
                 10, [], id="one leads"),
]


@pytest.mark.parametrize(("alert", "series", "minutes", "expected"), ALERT_CASES)
def test_alert_fires_only_on_trouble(quick_render: Callable[..., Rendered], tmp_path: Path, alert: str,
                                     series: list[dict[str, str]], minutes: int,
                                     expected: list[dict[str, str]]) -> None:
    assert_alert_fires(quick_render(MONITORING), tmp_path, alert=alert, series=series, minutes=minutes,
                       expected=expected)
