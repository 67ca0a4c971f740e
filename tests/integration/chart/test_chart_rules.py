"""The chart's rule file (ConfigMap key config.yaml): built from rules.default/custom/external/resource
exactly as the prometheus-adapter chart lays them out, loaded by the adapter's own loader, and
checked by `python -m adapter check-config` as a user would before installing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapter.config import load_config, parse_config
from adapter.rules import compile_config
from tests import paths
from tests.fixtures.adapter import run_adapter
from tests.integration.chart.conftest import CHART, FULLNAME, REPO, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REALISTIC = CHART / "ci" / "realistic-values.yaml"
DEMO_CONFIG = REPO / "hack" / "demo" / "config.yaml"
VECTORS = paths.VECTORS / "prometheus-adapter-public.json"


def _rule_text(rendered: Rendered) -> str:
    return rendered.one("ConfigMap", FULLNAME)["data"]["config.yaml"]


def _check_config(path: Path) -> subprocess.CompletedProcess[str]:
    return run_adapter("check-config", str(path))


@pytest.fixture(scope="module")
def defaults_only(quick_render: Callable[..., Rendered]) -> Rendered:
    return quick_render()


def test_realistic_rule_file_is_the_values_given(quick_render: Callable[..., Rendered]) -> None:
    values = yaml.safe_load(REALISTIC.read_text())
    text = _rule_text(quick_render(files=[REALISTIC]))
    assert yaml.safe_load(text) == {"rules": values["rules"]["custom"],
                                    "externalRules": values["rules"]["external"],
                                    "resourceRules": values["rules"]["resource"]}
    compiled = compile_config(parse_config(text, source="config.yaml"))
    assert (len(compiled.custom), len(compiled.external)) == (3, 2)
    assert compiled.resource is not None and compiled.resource.window_seconds == 300


def test_default_rules_are_prometheus_adapters(defaults_only: Rendered) -> None:
    """rules.default renders prometheus-adapter's DefaultConfig(rate, "") rules (the vectors' fact),
    with the chart's rate window (rules.defaultRateInterval, 5m as the prometheus-adapter chart)."""
    fixture = json.loads(VECTORS.read_text())["fixtures"]["default_config_no_prefix_1m"]
    expected = json.loads(json.dumps([{k: v for k, v in rule.items() if k != "_comment"}
                                      for rule in fixture["rules"]]).replace("[1m]", "[5m]"))
    assert yaml.safe_load(_rule_text(defaults_only)) == {"rules": expected}


def test_custom_rules_follow_the_defaults(quick_render: Callable[..., Rendered]) -> None:
    custom = {"seriesQuery": 'jobs_waiting{namespace!=""}', "resources": {"template": "<<.Resource>>"},
              "metricsQuery": "max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"}
    rules = yaml.safe_load(_rule_text(quick_render({"rules": {"custom": [custom], "defaultRateInterval": "2m"}})))
    assert len(rules["rules"]) == 7 and rules["rules"][-1] == custom
    assert "[2m]" in rules["rules"][0]["metricsQuery"]


def test_default_rules_pass_check_config(defaults_only: Rendered, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(_rule_text(defaults_only))
    result = _check_config(path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_demo_rule_file_carries_over_as_values(quick_render: Callable[..., Rendered], tmp_path: Path) -> None:
    """The documented demo rule file, given as rules.* values, comes out as the same rule file."""
    demo = yaml.safe_load(DEMO_CONFIG.read_text())
    values = {"rules": {"default": False, "custom": demo["rules"], "external": demo["externalRules"],
                        "resource": demo["resourceRules"]}, "apiService": {"resourceMetrics": {"enabled": True}}}
    rendered = quick_render(values)
    path = tmp_path / "config.yaml"
    path.write_text(_rule_text(rendered))
    assert yaml.safe_load(path.read_text()) == demo
    # Same data (overrides are a map: toYaml sorts their keys, which does not change meaning).
    ours, theirs = compile_config(load_config(path)), compile_config(load_config(DEMO_CONFIG))
    assert [r.series_query for r in ours.custom + ours.external] == \
        [r.series_query for r in theirs.custom + theirs.external]
    assert ours.resource is not None and theirs.resource is not None
    result = _check_config(path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "v1beta1.metrics.k8s.io" in rendered.names("APIService")


def test_existing_configmap_replaces_the_rule_file(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"rules": {"existing": "team-rules", "custom": [{"seriesQuery": "up", "metricsQuery": "max(up)"}]}})
    assert rendered.all("ConfigMap") == []
    pod = rendered.adapter["spec"]["template"]["spec"]
    [config] = [v for v in pod["volumes"] if v["name"] == "config"]
    assert config["configMap"]["name"] == "team-rules"


def test_pods_roll_when_rules_change(quick_render: Callable[..., Rendered]) -> None:
    def checksum(values: dict[str, Any]) -> str:
        return quick_render(values).adapter["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum({}) != checksum({"rules": {"defaultRateInterval": "3m"}})
