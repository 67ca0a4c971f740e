"""A metrics query template never fails on a field it does not read: `<<.Series>>` alone serves
its metric even when the rule maps no label for the request's namespace (or resource), because
nothing derived from those labels reaches the query. A template that does read them still fails
as upstream's does: 404 `could not find the metric`, the missing mapping in the log."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from adapter.config import parse_config
from adapter.discovery.registry import build_registry
from adapter.rules import compile_config
from tests.unit.adapter.api_harness import CUSTOM, T, item, prom_json, serve_adapter, vector

SERIES_QUERY = 'up_total{pod!=""}'


def _registry(metrics_query: str) -> Any:
    text = f"""
rules:
- seriesQuery: '{SERIES_QUERY}'
  resources: {{overrides: {{pod: {{resource: pod}}}}}}
  metricsQuery: '{metrics_query}'
"""
    compiled = compile_config(parse_config(text, source="rules.yaml"))
    return build_registry(compiled, {SERIES_QUERY: [{"__name__": "up_total", "pod": "web-0"}]})


@pytest.mark.timeout(10)  # two in-process servers (the adapter, a fake Prometheus): past 2 s when loaded
@pytest.mark.parametrize("metrics_query, status, sent", [
    pytest.param("<<.Series>>", 200, "up_total", id="series only: no namespace label needed"),
    pytest.param("sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)", 404, None,
                 id="label matchers read: the missing namespace mapping is upstream's 404"),
])
async def test_a_template_fails_only_on_fields_it_reads(metrics_query: str, status: int, sent: str | None) -> None:
    queries: list[str] = []

    async def prometheus(request: web.Request) -> web.StreamResponse:
        form = await request.post() if request.method == "POST" else request.query
        queries.append(str(form.get("query")))
        return prom_json(vector(item("3", T, pod="web-0")))

    async with serve_adapter(prometheus, snapshot=_registry(metrics_query)) as http:
        response = await http.get(f"{CUSTOM}/namespaces/shop/pods/web-0/up_total")
        body = await response.json()
    assert response.status == status, body
    if sent is None:
        assert queries == [] and body["message"] == "the server could not find the metric up_total for pods"
    else:
        assert queries == [sent] and body["items"][0]["value"] == "3"
