"""The chart's realistic values hold prometheus-adapter's deploy-manifest resource rules; the one
source of those is tests/integration/adapter/configs/deploy-manifests.yaml (upstream's
config-map.yaml). Helm cannot read files outside the chart, so the values keep their own copy and
this test holds it to the source through what `helm template` renders."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.chart.conftest import CHART, FULLNAME, REPO, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SOURCE = REPO / "tests" / "integration" / "adapter" / "configs" / "deploy-manifests.yaml"


def _same_promql(value: Any) -> Any:
    """Rule data with query whitespace folded (the values file lays the queries out on lines)."""
    if isinstance(value, dict):
        return {k: _same_promql(v) for k, v in value.items()}
    if isinstance(value, str):
        return re.sub(r"\s+", "", value)
    return value


def test_helm_renders_the_deploy_manifest_resource_rules(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render(files=[CHART / "ci" / "realistic-values.yaml"])
    rules = yaml.safe_load(rendered.one("ConfigMap", FULLNAME)["data"]["config.yaml"])["resourceRules"]
    source = yaml.safe_load(SOURCE.read_text())["resourceRules"]
    assert _same_promql(rules) == _same_promql(source)
