"""One source for the resource rules (`resourceRules:`) the house serves: the demo rule file's
section. The local stack, the demo and the services' unit fixture all take it from there, so a
change to it reaches every one of them (they used to hold three copies that had drifted apart).

The chart's realistic values carry prometheus-adapter's deploy-manifest rules instead (real
kubelet series, irate over 4m, window 5m); tests/integration/chart/test_chart_resource_rules.py
checks `helm template` renders exactly those.
"""

from __future__ import annotations

import yaml

from hack.stack import metrics_stack
from tests import paths
from tests.unit.adapter.services import conftest as services_fixture

DEMO = paths.REPO / "hack" / "demo" / "config.yaml"


def _resource_rules(text: str) -> object:
    return yaml.safe_load(text)["resourceRules"]


def test_the_demo_file_is_the_source_the_stack_serves() -> None:
    assert metrics_stack.DEMO_RULES == DEMO
    assert _resource_rules(metrics_stack.RULES) == _resource_rules(DEMO.read_text())


def test_the_services_fixture_serves_the_same_rules() -> None:
    assert _resource_rules(services_fixture.RULES) == _resource_rules(DEMO.read_text())


def test_the_section_is_cut_whole_wherever_it_sits() -> None:
    section = metrics_stack.demo_resource_rules()
    assert section.startswith("resourceRules:\n") and yaml.safe_load(section) == {
        "resourceRules": _resource_rules(DEMO.read_text())}
    # nothing but the rules themselves: no other top-level key leaks in
    assert [line for line in section.splitlines() if line and not line[0].isspace()] == ["resourceRules:"]
