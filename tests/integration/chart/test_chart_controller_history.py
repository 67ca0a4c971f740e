"""The controller reads metric history (spec.prediction) from the adapter's Prometheus, as the chart wires it.

- the controller gets the adapter's Prometheus URL, its credential flags and files (one set of
  `prometheus.*` values for both), and the adapter's rule file mounted from the same ConfigMap;
  the command line parses with `controller.options` and the mounted rule file compiles with
  `controller.history.rules`, so the controller resolves metrics exactly as the adapter does;
- controller.history.enabled=false, or no rule file (adapter off, no rules.existing), wires none;
- the chart's rule file changing rolls the controller (it reads the rules at start).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.history.rules import load_rules
from controller.options import parse as parse_controller_flags
from tests.integration.chart.conftest import FULLNAME, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CONTROLLER = f"{FULLNAME}-controller"
ACCESS = {"timeout": "20s", "ca": {"existingSecret": "prom-ca"}, "clientCert": {"existingSecret": "prom-client"},
          "bearerToken": {"existingSecret": "prom-token"}, "headers": {"X-Scope-OrgID": "tenant-1"}}


def _pod(rendered: Rendered, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = rendered.one("Deployment", name)["spec"]["template"]
    return spec


def _prometheus_flags(pod: dict[str, Any]) -> set[str]:
    return {a for a in pod["spec"]["containers"][0]["args"]
            if a.startswith("--prometheus-") and not a.startswith(("--prometheus-verb", "--prometheus-max-"))}


def _mounts(pod: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}


def _volumes(pod: dict[str, Any]) -> dict[str, Any]:
    return {v["name"]: {k: v[k] for k in v if k != "name"} for v in pod["spec"]["volumes"]}


def test_the_controller_reads_the_adapters_prometheus_with_the_adapters_credentials_and_rules(
        quick_render: Callable[..., Rendered], tmp_path: Path) -> None:
    rendered = quick_render({"prometheus": ACCESS})
    adapter, controller = _pod(rendered, FULLNAME), _pod(rendered, CONTROLLER)
    assert _prometheus_flags(controller) == _prometheus_flags(adapter)
    credentials = ("prometheus-ca", "prometheus-client-cert", "prometheus-token")
    assert {n: _mounts(controller)[n] for n in credentials} == {n: _mounts(adapter)[n] for n in credentials}
    assert {n: _volumes(controller)[n] for n in credentials} == {n: _volumes(adapter)[n] for n in credentials}
    assert _volumes(controller)["rules"] == _volumes(adapter)["config"]  # the same ConfigMap
    options = parse_controller_flags(controller["spec"]["containers"][0]["args"])
    h = options.history
    assert (h.prometheus_url, h.rules, h.timeout, h.step, h.max_lookback, h.headers) == (
        "http://prometheus.default.svc:9090", "/etc/prom-autoscaler/rules/config.yaml", 20.0, 60.0, 14 * 86400.0,
        (("X-Scope-OrgID", "tenant-1"),))
    assert (h.ca_file, h.token_file) == ("/var/run/prometheus/ca/ca.crt", "/var/run/prometheus/token/token")
    assert Path(h.rules).parent.as_posix() == _mounts(controller)["rules"]
    rules = tmp_path / "config.yaml"
    rules.write_text(rendered.one("ConfigMap", FULLNAME)["data"]["config.yaml"])
    assert load_rules(str(rules)).custom  # the chart's default rules, compiled by the controller's door to them


def test_basic_auth_and_the_pods_own_token_reach_the_controller_too(quick_render: Callable[..., Rendered]) -> None:
    basic = quick_render({"prometheus": {"basicAuth": {"existingSecret": "prom-basic", "username": "bob"}}})
    h = parse_controller_flags(_pod(basic, CONTROLLER)["spec"]["containers"][0]["args"]).history
    assert (h.basic_auth_username, h.basic_auth_password_file) == ("bob", "/var/run/prometheus/basic-auth/password")
    assert _volumes(_pod(basic, CONTROLLER))["prometheus-basic-auth"] == {"secret": {"secretName": "prom-basic"}}
    own = quick_render({"prometheus": {"bearerToken": {"serviceAccountToken": True}}})
    h = parse_controller_flags(_pod(own, CONTROLLER)["spec"]["containers"][0]["args"]).history
    assert h.token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token"


@pytest.mark.parametrize("values", [
    pytest.param({"controller": {"history": {"enabled": False}}}, id="controller.history.enabled=false"),
    pytest.param({"adapter": {"enabled": False}}, id="no adapter and no rules.existing: no rule file to read"),
])
def test_no_history_wiring(quick_render: Callable[..., Rendered], values: dict[str, Any]) -> None:
    pod = _pod(quick_render(values), CONTROLLER)
    assert _prometheus_flags(pod) == set() and "rules" not in _volumes(pod)
    assert parse_controller_flags(pod["spec"]["containers"][0]["args"]).history.prometheus_url is None


def test_an_existing_rules_configmap_is_read_even_without_the_adapter(quick_render: Callable[..., Rendered]) -> None:
    pod = _pod(quick_render({"adapter": {"enabled": False}, "rules": {"existing": "my-rules"}}), CONTROLLER)
    assert _volumes(pod)["rules"] == {"configMap": {"name": "my-rules"}}
    assert "checksum/rules" not in (pod["metadata"].get("annotations") or {})  # not the chart's to hash


def test_a_changed_rule_file_rolls_the_controller(quick_render: Callable[..., Rendered]) -> None:
    def checksum(values: dict[str, Any]) -> str:
        annotations: dict[str, str] = _pod(quick_render(values), CONTROLLER)["metadata"]["annotations"]
        return annotations["checksum/rules"]

    assert checksum({}) != checksum({"rules": {"defaultRateInterval": "2m"}})
