"""Review of the backtest's Prometheus reads: every broken answer is one `HistoryError` naming the query.

A Prometheus (or a proxy, Thanos, Mimir or a gateway in front of it) can answer something that is
not the range-query document the API promises. The backtest must stop with a message that names
the query and says what was wrong, never a KeyError/TypeError traceback, and never fold a value
it could not read into the history. The server here is a real HTTP server on 127.0.0.1 answering
fixed bodies; nothing of ours is patched.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from controller.history.prometheus import HistoryError, Job, PrometheusHistory
from controller.backtest.model import Grid
from controller.backtest.options import parse_options
from controller.backtest.report import render_text
from controller.backtest.report_data import render_json
from controller.backtest.report_html import render_html
from controller.backtest.run import run_backtest
from tests.fixtures.prom_http import FakePromHTTP, Recorded

T0 = 1_767_225_600
RULES = """
rules:
- seriesQuery: '{__name__=~"^bt_.*",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
SPEC = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Pods
    pods: {metric: {name: bt_rps}, target: {type: AverageValue, averageValue: "10"}}
"""
SERIES = {"status": "success", "data": [{"__name__": "bt_rps", "namespace": "shop", "pod": "web-1"}]}
QUERY = 'sum(bt_rps{namespace="shop"}) by (pod)'


def _matrix(result: object, result_type: str = "matrix") -> bytes:
    return orjson.dumps({"status": "success", "data": {"resultType": result_type, "result": result}})


GOOD_SERIES = {"metric": {"pod": "web-1"}, "values": [[T0, "10"]]}


@pytest.fixture
async def answers() -> AsyncIterator[tuple[str, dict[str, tuple[int, bytes]]]]:
    """A Prometheus-shaped server; tests set `answers[path] = (status, body)`."""
    table: dict[str, tuple[int, bytes]] = {"/api/v1/series": (200, orjson.dumps(SERIES))}

    async def handle(request: Recorded) -> web.StreamResponse:
        status, body = table.get(request.path, (404, b"404 page not found"))
        return web.Response(status=status, body=body, content_type="application/json")

    server = await FakePromHTTP(handler=handle).start()
    try:
        yield server.url, table
    finally:
        await server.stop()


@pytest.mark.parametrize(("path", "status", "body", "says"), [
    pytest.param("/api/v1/query_range", 200, b"[]", "not a Prometheus API answer", id="a JSON list"),
    pytest.param("/api/v1/query_range", 200, b'{"status": "success"}', "no data", id="success without data"),
    pytest.param("/api/v1/query_range", 200, _matrix([{"metric": {}, "value": [T0, "1"]}], "vector"),
                 "resultType vector", id="a vector where a matrix belongs"),
    pytest.param("/api/v1/query_range", 200, _matrix(None), "result", id="result null"),
    pytest.param("/api/v1/query_range", 200, _matrix([{"metric": {"pod": "web-1"}}]), "values",
                 id="a series without values"),
    pytest.param("/api/v1/query_range", 200, _matrix([{"metric": {"pod": "web-1"}, "values": [[T0]]}]),
                 "[time, value]", id="a sample that is not a pair"),
    pytest.param("/api/v1/query_range", 200, _matrix([{"metric": {"pod": "web-1"}, "values": [[T0, "ten"]]}]),
                 "'ten'", id="a value that is no number"),
    pytest.param("/api/v1/query_range", 200, _matrix([{"metric": "web-1", "values": [[T0, "1"]]}]),
                 "labels", id="labels that are no object"),
    pytest.param("/api/v1/query_range", 502, b"<html>Bad Gateway</html>", "HTTP 502", id="a proxy's HTML page"),
    pytest.param("/api/v1/query_range", 422, orjson.dumps({
        "status": "error", "errorType": "execution",
        "error": "query processing would load too many samples into memory in query execution"}),
        "--chunk-points", id="too many samples: ask for fewer points per query"),
    pytest.param("/api/v1/query_range", 503, orjson.dumps({
        "status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"}),
        "--chunk-points", id="Prometheus' own query timeout: ask for fewer points per query"),
    pytest.param("/api/v1/series", 200, b'{"status": "success", "data": {"x": 1}}', "series",
                 id="series data that is no list"),
    pytest.param("/api/v1/series", 200, b'{"status": "success", "data": ["bt_rps"]}', "series",
                 id="a series that is no label set"),
])
async def test_a_malformed_answer_is_one_error_naming_the_query(
        answers: tuple[str, dict[str, tuple[int, bytes]]], tmp_path: Path,
        path: str, status: int, body: bytes, says: str) -> None:
    url, table = answers
    table.setdefault("/api/v1/query_range", (200, _matrix([GOOD_SERIES])))
    table[path] = (status, body)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "spec.yaml").write_text(SPEC)
    opts = parse_options(["-f", str(tmp_path / "spec.yaml"), "--rules", str(tmp_path / "rules.yaml"),
                          "--prometheus-url", url, "--from", str(T0), "--to", str(T0 + 60)], now=T0 + 3600)
    with pytest.raises(HistoryError) as caught:
        await run_backtest(opts)
    message = str(caught.value)
    assert says in message
    named = QUERY if path == "/api/v1/query_range" else "seriesQuery"
    assert named in message


async def test_prometheus_warnings_reach_the_report(answers: tuple[str, dict[str, tuple[int, bytes]]],
                                                    tmp_path: Path) -> None:
    # Thanos/Mimir answer a partial result (a store down) as success with a warning: the history may lack
    # pods or whole stretches. The run goes on, and every report says so, naming the query.
    url, table = answers
    partial = orjson.loads(_matrix([GOOD_SERIES]))
    partial["warnings"] = ["partial response: store 10.0.0.7:10901 unavailable"]
    table["/api/v1/query_range"] = (200, orjson.dumps(partial))
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "spec.yaml").write_text(SPEC)
    opts = parse_options(["-f", str(tmp_path / "spec.yaml"), "--rules", str(tmp_path / "rules.yaml"),
                          "--prometheus-url", url, "--from", str(T0), "--to", str(T0 + 60)], now=T0 + 3600)
    report = await run_backtest(opts)
    text = render_text(report)
    assert "Prometheus warnings" in text and "store 10.0.0.7:10901 unavailable" in text and QUERY in text
    assert orjson.loads(render_json(report))["warnings"] == [
        f"Pods bt_rps (AverageValue): {QUERY}: partial response: store 10.0.0.7:10901 unavailable"]
    assert "store 10.0.0.7:10901 unavailable" in render_html(report)


async def test_a_query_prometheus_takes_too_long_on_says_how_to_ask_less(tmp_path: Path) -> None:
    released = asyncio.Event()

    async def slow(_: Recorded) -> web.StreamResponse:
        await released.wait()  # longer than the client waits
        return web.Response(body=_matrix([]), content_type="application/json")

    server = await FakePromHTTP(handler=slow).start()
    grid = Grid(start=T0, step=15, count=10)
    try:
        async with PrometheusHistory(server.url, timeout=0.2) as prometheus:
            with pytest.raises(HistoryError) as caught:
                await prometheus.fetch([Job(what="Pods bt_rps: q", promql="q", consume=lambda _s: None)], grid)
    finally:
        released.set()
        await server.stop()
    assert "Pods bt_rps: q" in str(caught.value) and "--chunk-points" in str(caught.value)
