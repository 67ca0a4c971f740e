"""At start the adapter refuses rules whose overrides name a resource the cluster does not serve,
with upstream's message (prometheus-adapter's RESTMapper check), naming the rule and label."""

from __future__ import annotations

import pytest

from adapter.config import parse_config
from adapter.discovery.served import OverrideNotServed, check_overrides_served
from adapter.rules import compile_config
from kubecommon.kube.errors import UnknownResource

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'cheddar{brand!=""}'
  resources: {overrides: {brand: {group: cheese.io, resource: brand}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def _resolver(served: set[tuple[str, str]]):
    async def resolve(group: str, resource: str) -> None:
        if (group, resource) not in served:
            raise UnknownResource(group, resource)
    return resolve


CORE = {("", "namespaces"), ("", "pods")}


@pytest.mark.parametrize("served, refused", [
    pytest.param(CORE | {("cheese.io", "brands")}, None, id="every override served: starts"),
    pytest.param(CORE, "cheese.io", id="CRD not installed: refused"),
    pytest.param({("cheese.io", "brands")}, "Resource=namespaces", id="a core resource missing: refused"),
])
async def test_overrides_are_checked_through_discovery(served, refused) -> None:
    compiled = compile_config(parse_config(RULES, source="config.yaml"))
    if refused is None:
        await check_overrides_served(compiled, _resolver(served))
        return
    with pytest.raises(OverrideNotServed) as raised:
        await check_overrides_served(compiled, _resolver(served))
    message = str(raised.value)
    assert message.startswith("unable to construct naming scheme from metrics rules: unable to normalize "
                              "group-resource {")
    assert refused in message and "rules[" in message
