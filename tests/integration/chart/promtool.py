"""The chart's alert rules checked by the real `promtool test rules`: a rendered PrometheusRule,
input series and the alerts expected to fire at a given minute."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.chart.conftest import FULLNAME, Rendered


def promtool() -> str:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool not found: install Prometheus (Debian: apt-get install prometheus)")
    return binary


def rule_groups(rendered: Rendered) -> list[dict[str, Any]]:
    """The groups of the release's PrometheusRule, as rendered."""
    groups: list[dict[str, Any]] = rendered.one("PrometheusRule", FULLNAME)["spec"]["groups"]
    return groups


def assert_alert_fires(rendered: Rendered, workdir: Path, *, alert: str, series: list[dict[str, str]],
                       minutes: int, expected: list[dict[str, str]]) -> None:
    """`promtool test rules`: after `minutes` of `series`, `alert` fires with exactly the labels in
    `expected` (none: it stays quiet). Annotations are left out (promtool would compare them too;
    `promtool check rules` checks them)."""
    groups = [{"name": g["name"], "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
              for g in rule_groups(rendered)]
    assert alert in {r["alert"] for g in groups for r in g["rules"]}
    (workdir / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series,
                       "alert_rule_test": [{"eval_time": f"{minutes}m", "alertname": alert,
                                            "exp_alerts": [{"exp_labels": labels} for labels in expected]}]}]}
    (workdir / "test.yaml").write_text(yaml.safe_dump(test))
    result = subprocess.run([promtool(), "test", "rules", "test.yaml"], cwd=workdir, capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
