"""The real adapter, started against the API-server stand-in, refuses a rule file whose override
names a resource the cluster does not serve, with prometheus-adapter's start-up message (every
other live test starts with overrides the stand-in serves)."""

from __future__ import annotations

import pytest

from tests.fixtures.adapter import adapter_args, run_adapter

pytestmark = [pytest.mark.integration]

RULES = """
rules:
- seriesQuery: 'cheddar_eaten_total{namespace!="",brand!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      brand: {group: %s, resource: brand}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
"""


@pytest.mark.timeout(60)
def test_an_override_naming_an_unserved_resource_refuses_to_start(kube_standin, tmp_path):
    (tmp_path / "rules.yaml").write_text(RULES % "cheese.io")
    result = run_adapter(*adapter_args(tmp_path, 0, prometheus_url="http://127.0.0.1:1",
                                       kubeconfig=kube_standin.kubeconfig))
    assert result.returncode == 1, result.stderr
    assert ("unable to construct naming scheme from metrics rules: unable to normalize group-resource "
            "{cheese.io brands}") in result.stderr
    assert "rules[0]" in result.stderr and "'brand'" in result.stderr
