"""Live rule reload: a ConfigMap update (an atomic symlink swap) is noticed, a valid file is
compiled and handed over, an invalid one is refused with the start-up error and the previous
rules stay; discovery swaps new rules in with the relist they start; /metrics shows the file in
force and the last reload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapter.config.errors import ConfigError
from adapter.discovery.relist import Discovery
from adapter.discovery.reload import ReloadRefused, RuleReloader, file_sha256, load_rule_file
from adapter.prometheus import errors
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig
from adapter.server.telemetry import StateSource, Telemetry

RULES_V1 = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
"""
RULES_V2 = RULES_V1.replace("${1}_per_second", "${1}_rate")
BROKEN = RULES_V1.replace("metricsQuery:", "metricQuery:")
SERIES = [{"__name__": "http_requests_total", "namespace": "shop", "pod": "web-0"}]


class ConfigMapVolume:
    """A directory laid out like kubelet's ConfigMap volume: rules.yaml -> ..data/rules.yaml,
    ..data -> ..<version>; an update writes a new version directory and swaps ..data atomically."""

    def __init__(self, root: Path, text: str) -> None:
        self.root, self.version = root, 0
        self.update(text)
        (root / "rules.yaml").symlink_to("..data/rules.yaml")

    @property
    def path(self) -> str:
        return str(self.root / "rules.yaml")

    def update(self, text: str) -> None:
        self.version += 1
        version = self.root / f"..v{self.version}"
        version.mkdir()
        (version / "rules.yaml").write_text(text)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, self.root / "..data")


class Applied:
    def __init__(self, refuse: str = "") -> None:
        self.configs: list[CompiledConfig] = []
        self.refuse = refuse

    async def __call__(self, compiled: CompiledConfig) -> None:
        if self.refuse:
            raise ReloadRefused(self.refuse)
        self.configs.append(compiled)


def reloader_for(volume: ConfigMapVolume, apply: Applied) -> RuleReloader:
    _, sha = load_rule_file(volume.path)
    return RuleReloader(volume.path, loaded_sha256=sha, apply=apply, interval=1, clock=lambda: 1234.0)


async def test_a_configmap_update_is_reloaded_and_an_invalid_one_refused(tmp_path: Path) -> None:
    volume, applied = ConfigMapVolume(tmp_path, RULES_V1), Applied()
    reloader = reloader_for(volume, applied)
    assert await reloader.check() is None and applied.configs == []  # unchanged
    volume.update(RULES_V2)
    assert await reloader.check() is True
    [compiled] = applied.configs
    assert compiled.custom[0].metric_name("http_requests_total") == "http_requests_rate"
    state = reloader.state()
    assert (state.sha256, state.last_result, state.last_time, state.successes) == (
        file_sha256(RULES_V2), "success", 1234.0, 1)

    volume.update(BROKEN)
    assert await reloader.check() is False
    state = reloader.state()
    assert (state.sha256, state.last_result, state.failures) == (file_sha256(RULES_V2), "failure", 1)
    with pytest.raises(ConfigError) as at_start:
        load_rule_file(volume.path)
    assert state.last_error == str(at_start.value)  # the same file/rule/field error as at start
    assert "metricQuery" in state.last_error and volume.path in state.last_error
    assert await reloader.check() is None  # a refused version is not retried until it changes
    assert len(applied.configs) == 1

    volume.update(RULES_V1)
    assert await reloader.check() is True
    assert reloader.state().sha256 == file_sha256(RULES_V1) and len(applied.configs) == 2


async def test_rules_the_running_server_cannot_take_are_refused(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, RULES_V1)
    reloader = reloader_for(volume, Applied(refuse="adding or removing resourceRules needs a restart"))
    volume.update(RULES_V2)
    assert await reloader.check() is False
    assert reloader.state().last_error == "adding or removing resourceRules needs a restart"


async def test_discovery_swaps_new_rules_in_with_the_relist_they_start(tmp_path: Path) -> None:
    prometheus = FakePrometheus()
    prometheus.set_series('http_requests_total{namespace!="",pod!=""}', SERIES)
    v1, _ = load_rule_file(str(_write(tmp_path / "v1.yaml", RULES_V1)))
    v2, _ = load_rule_file(str(_write(tmp_path / "v2.yaml", RULES_V2.replace(
        "http_requests_total{", "http_requests_total{job!=\"\","))))
    discovery = Discovery(prometheus, v1, interval=60)
    assert await discovery.relist()
    assert [m.metric for m in discovery.snapshot.custom_metrics()] == ["http_requests_per_second"] * 2
    prometheus.set_series('http_requests_total{job!="",namespace!="",pod!=""}',
                          errors.PrometheusUnreachable("down"))
    assert not await discovery.use_rules(v2)  # the relist with the new rules failed: old registry stays
    assert [m.metric for m in discovery.snapshot.custom_metrics()] == ["http_requests_per_second"] * 2
    prometheus.set_series('http_requests_total{job!="",namespace!="",pod!=""}', SERIES)
    assert await discovery.relist()  # the next relist uses them
    assert [m.metric for m in discovery.snapshot.custom_metrics()] == ["http_requests_rate"] * 2


async def test_metrics_show_the_file_in_force_and_the_last_reload(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, RULES_V1)
    reloader = reloader_for(volume, Applied())
    telemetry = Telemetry()
    telemetry.add_state(StateSource(rules=reloader.state))
    from prometheus_client import generate_latest

    before = generate_latest(telemetry.registry).decode()
    assert f'prom_autoscaler_adapter_rule_file_info{{sha256="{file_sha256(RULES_V1)}"}} 1.0' in before
    assert "rule_file_last_reload_success" not in before
    volume.update(BROKEN)
    await reloader.check()
    after = generate_latest(telemetry.registry).decode()
    assert "prom_autoscaler_adapter_rule_file_last_reload_success 0.0" in after
    assert "prom_autoscaler_adapter_rule_file_last_reload_timestamp_seconds 1234.0" in after
    assert 'prom_autoscaler_adapter_rule_file_reloads_total{result="failure"} 1.0' in after


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
