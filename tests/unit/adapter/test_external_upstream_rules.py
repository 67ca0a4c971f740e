"""externalRules as prometheus-adapter serves them, over HTTP (the adapter's app in process over a
fake Prometheus): the PromQL each request sends and the answer a client gets.

* `resources.namespaced` left true on a rule that maps no label to namespaces: every request is
  a 500 (upstream issue #282), while the same rule with `namespaced: false` serves (PR #380);
* a query returning raw series keeps every label in `metricLabels`, `__name__` included;
* the selector's matchers come first, sorted by key, then the namespace matcher.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from adapter.config import parse_config
from adapter.discovery.registry import build_registry
from adapter.rules import compile_config
from tests.unit.adapter.api_harness import EXTERNAL, item, prom_json, serve_adapter, vector

RULES = r"""
externalRules:
- seriesQuery: 'jobs_waiting{queue!=""}'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'jobs_waiting{queue!=""}'
  name: {as: "global_jobs_waiting"}
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'lag_seconds{namespace!="",topic!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: '<<.Series>>{<<.LabelMatchers>>}'
"""
SERIES = {
    'jobs_waiting{queue!=""}': [{"__name__": "jobs_waiting", "queue": "a"}],
    'lag_seconds{namespace!="",topic!=""}': [{"__name__": "lag_seconds", "namespace": "shop", "topic": "t"}],
}


async def _get(path: str, answer: dict[str, Any]) -> tuple[int, Any, list[str]]:
    sent: list[str] = []

    async def prometheus(request: web.Request) -> web.Response:
        form = await request.post() if request.method == "POST" else request.query
        sent.append(str(form.get("query")))
        return prom_json(answer)

    snapshot = build_registry(compile_config(parse_config(RULES, source="rules.yaml")), SERIES)
    async with serve_adapter(prometheus, snapshot=snapshot) as http:
        resp = await http.get(path)
        return resp.status, await resp.json(), sent


@pytest.mark.parametrize("namespace", ["default", "shop"])
async def test_a_namespaced_rule_without_a_namespace_label_fails_every_request(namespace: str) -> None:
    code, body, sent = await _get(f"{EXTERNAL}/namespaces/{namespace}/jobs_waiting",
                                  vector(item("3", queue="a")))
    assert (code, body["reason"], sent) == (500, "InternalError", [])


@pytest.mark.parametrize("namespace", ["default", "shop"])
async def test_the_same_rule_with_namespaced_false_serves_from_any_namespace(namespace: str) -> None:
    code, body, sent = await _get(f"{EXTERNAL}/namespaces/{namespace}/global_jobs_waiting?labelSelector="
                                  + quote("queue notin (b.c)"), vector(item("3", queue="a")))
    assert code == 200, body
    assert sent == ['sum(jobs_waiting{queue!~"b\\\\.c"}) by (queue)']
    assert [(i["metricName"], i["metricLabels"], i["value"]) for i in body["items"]] == [
        ("global_jobs_waiting", {"queue": "a"}, "3")]


async def test_raw_series_keep_every_label_and_matchers_are_sorted_before_the_namespace() -> None:
    labels = {"__name__": "lag_seconds", "namespace": "shop", "topic": "t", "partition": "0"}
    code, body, sent = await _get(f"{EXTERNAL}/namespaces/shop/lag_seconds?labelSelector="
                                  + quote("topic=t,partition,!dead"), vector(item("1.5", **labels)))
    assert code == 200, body
    assert sent == ['lag_seconds{dead="",partition!="",topic="t",namespace="shop"}']
    assert [(i["metricLabels"], i["value"]) for i in body["items"]] == [(labels, "1500m")]
