"""PrometheusClient against an in-process server speaking Prometheus' HTTP API: results, error
mapping, GET/POST choice, timeouts, series streaming, singleflight."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from adapter.prometheus import errors
from adapter.prometheus.api import PrometheusAPI, Sample
from adapter.prometheus.client import USER_AGENT, PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from tests.fixtures.prom_http import FakePromHTTP, Recorded, json_response, slow, vector


@pytest.fixture
async def server() -> AsyncIterator[FakePromHTTP]:
    srv = await FakePromHTTP().start()
    yield srv
    await srv.stop()


def client_for(server: FakePromHTTP, **kw: object) -> PrometheusClient:
    return PrometheusClient(PrometheusSettings(url=server.url, **kw))  # type: ignore[arg-type]


async def test_client_satisfies_the_port() -> None:
    assert isinstance(PrometheusClient(PrometheusSettings(url="http://127.0.0.1:1")), PrometheusAPI)


async def test_vector_result_becomes_samples(server: FakePromHTTP) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        return json_response(vector(({"pod": "a"}, "0.5"), ({"pod": "b"}, "NaN"),
                                    ({"pod": "c"}, "+Inf")))

    server.handler = handler
    async with client_for(server) as client:
        samples = await client.query("sum(x) by (pod)", time=1700000000.25)  # type: ignore[arg-type]
    assert [(s.labels, s.timestamp) for s in samples] == [
        ({"pod": "a"}, 1700000000.5), ({"pod": "b"}, 1700000000.5), ({"pod": "c"}, 1700000000.5)]
    assert samples[0].value == 0.5 and math.isnan(samples[1].value) and samples[2].value == math.inf
    req = server.requests[0]
    assert (req.method, req.path) == ("GET", "/api/v1/query")
    assert req.params["query"] == "sum(x) by (pod)"
    assert req.params["time"] == "1700000000.250"
    assert req.params["timeout"] == "30"  # our deadline (seconds) is passed on to Prometheus


async def test_scalar_result_is_one_sample_without_labels(server: FakePromHTTP) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        return json_response({"status": "success",
                              "data": {"resultType": "scalar", "result": [1700000001, "12"]}})

    server.handler = handler
    async with client_for(server) as client:
        assert await client.query("scalar(x)") == [  # type: ignore[arg-type]
            Sample(labels={}, value=12.0, timestamp=1700000001.0)]


ERROR_CASES = [
    pytest.param(400, {"status": "error", "errorType": "bad_data",
                       "error": 'invalid parameter "query": parse error'},
                 errors.PrometheusBadQuery, "parse error", id="400 bad_data is a bad query"),
    pytest.param(422, {"status": "error", "errorType": "execution",
                       "error": "many-to-many matching not allowed"},
                 errors.PrometheusBadQuery, "many-to-many", id="422 execution is a bad query"),
    pytest.param(503, {"status": "error", "errorType": "timeout",
                       "error": "query timed out in expression evaluation"},
                 errors.PrometheusTimeout, "timed out", id="503 timeout is a timeout"),
    pytest.param(503, {"status": "error", "errorType": "unavailable", "error": "not ready"},
                 errors.PrometheusHTTPError, "HTTP 503", id="503 unavailable is an HTTP error"),
    pytest.param(500, "upstream connect error", errors.PrometheusHTTPError,
                 "upstream connect error", id="500 text from a proxy"),
    pytest.param(401, "Unauthorized", errors.PrometheusHTTPError, "HTTP 401",
                 id="401 from an auth proxy"),
    pytest.param(404, "404 page not found", errors.PrometheusHTTPError, "HTTP 404",
                 id="404 wrong URL prefix"),
    pytest.param(200, "<html>login</html>", errors.PrometheusBadResponse, "",
                 id="200 HTML is a bad response"),
    pytest.param(200, {"status": "success", "data": {"resultType": "matrix", "result": []}},
                 errors.PrometheusBadResponse, "matrix", id="matrix result rejected"),
    pytest.param(200, {"status": "success", "data": {"resultType": "string",
                                                     "result": [1, "x"]}},
                 errors.PrometheusBadResponse, "string", id="string result rejected"),
    pytest.param(200, {"status": "success"}, errors.PrometheusBadResponse, "without data",
                 id="success without data"),
    pytest.param(200, {"status": "success", "data": {"resultType": "vector",
                                                     "result": [{"metric": {}}]}},
                 errors.PrometheusBadResponse, "malformed", id="vector item without value"),
]


@pytest.mark.parametrize(("status", "body", "exc_type", "text"), ERROR_CASES)
async def test_errors_are_typed(server: FakePromHTTP, status: int, body: object,
                                exc_type: type[Exception], text: str) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        if isinstance(body, str):
            return web.Response(status=status, text=body)
        return json_response(body, status)

    server.handler = handler
    async with client_for(server) as client:
        with pytest.raises(exc_type) as info:
            await client.query("up")  # type: ignore[arg-type]
    assert type(info.value) is exc_type
    assert text in str(info.value)
    assert str(info.value).startswith("/api/v1/query")


async def test_unreachable_prometheus() -> None:
    async with PrometheusClient(PrometheusSettings(url="http://127.0.0.1:1")) as client:
        with pytest.raises(errors.PrometheusUnreachable):
            await client.query("up")  # type: ignore[arg-type]


async def test_per_call_timeout(server: FakePromHTTP) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        return await slow(0.6, json_response(vector()))

    server.handler = handler
    async with client_for(server, timeout=0.2) as client:
        with pytest.raises(errors.PrometheusTimeout, match="0.2s"):
            await client.query("up")  # type: ignore[arg-type]
    assert server.requests[0].params["timeout"] == "0.2"


@pytest.mark.parametrize(("verb", "query_len", "expected"), [
    pytest.param("GET", 10, "GET", id="short query is a GET"),
    pytest.param("GET", 5000, "POST", id="long query is POSTed"),
    pytest.param("POST", 10, "POST", id="--prometheus-verb=POST always POSTs"),
])
async def test_get_or_post(server: FakePromHTTP, verb: str, query_len: int, expected: str) -> None:
    promql = 'x{pod=~"' + "a" * query_len + '"}'
    async with client_for(server, verb=verb) as client:
        assert len(await client.query(promql)) == 1  # type: ignore[arg-type]
    req = server.requests[0]
    assert req.method == expected
    assert req.params["query"] == promql


async def test_an_error_answer_longer_than_the_answer_limit_still_names_its_error(server: FakePromHTTP) -> None:
    """The limit bounds what is read, not what is said: the start of an error document is read."""
    async def handler(req: Recorded) -> web.StreamResponse:
        return json_response({"status": "error", "errorType": "timeout", "error": "query timed out",
                              "padding": "x" * 4096}, status=503)

    server.handler = handler
    async with client_for(server, max_answer_bytes=1024) as client:
        with pytest.raises(errors.PrometheusTimeout, match="query timed out"):
            await client.query("up")  # type: ignore[arg-type]


async def test_get_answered_414_is_retried_as_post(server: FakePromHTTP) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        if req.method == "GET":
            return web.Response(status=414, text="URI Too Long")
        return json_response(vector(({"pod": "a"}, "3")))

    server.handler = handler
    async with client_for(server) as client:
        samples = await client.query("up")  # type: ignore[arg-type]
    assert [s.value for s in samples] == [3.0]
    assert [r.method for r in server.requests] == ["GET", "POST"]


async def test_an_instant_query_follows_a_redirect(server: FakePromHTTP) -> None:
    """A proxy that moved Prometheus (`/old/...` answered 302): the query still gets its answer."""
    async def handler(req: Recorded) -> web.StreamResponse:
        if req.path.startswith("/old/"):
            raise web.HTTPFound(req.path.removeprefix("/old") + "?query=up&timeout=30")
        return json_response(vector(({"pod": "a"}, "4")))

    server.handler = handler
    async with PrometheusClient(PrometheusSettings(url=f"{server.url}/old")) as client:
        first = await client.query("up")  # type: ignore[arg-type]
        second = await client.query("up + 0")  # type: ignore[arg-type]
    assert [s.value for s in first + second] == [4.0, 4.0]
    # the first redirect moves instant queries to the client that follows redirects, for good
    assert [r.path for r in server.requests] == ["/old/api/v1/query", "/old/api/v1/query", "/api/v1/query",
                                                  "/old/api/v1/query", "/api/v1/query"]


async def test_queries_share_kept_alive_connections_and_say_who_asks(server: FakePromHTTP) -> None:
    async with client_for(server) as client:
        for promql in ("up", "up + 1", "up + 2"):
            await client.query(promql)  # type: ignore[arg-type]
        await client.series(["up"], start=1.0, end=2.0)
    assert {r.headers["User-Agent"] for r in server.requests} == {USER_AGENT}
    assert len({r.peer_port for r in server.requests[:3]}) == 1


async def test_url_path_prefix_and_query_parameters_are_kept(server: FakePromHTTP) -> None:
    settings_url = f"{server.url}/prometheus/?tenant=team-a"
    async with PrometheusClient(PrometheusSettings(url=settings_url)) as client:
        await client.query("up")  # type: ignore[arg-type]
        await client.series(["up"], start=1.0, end=2.0)
    assert [r.path for r in server.requests] == ["/prometheus/api/v1/query",
                                                  "/prometheus/api/v1/series"]
    assert all(r.params["tenant"] == "team-a" for r in server.requests)


async def test_series_is_posted_with_every_matcher_and_window(server: FakePromHTTP) -> None:
    async with client_for(server) as client:
        series = await client.series(['{namespace!=""}', 'up{job="x"}'],
                                     start=1565786045.3234, end=1565786645.0)
    assert series == [{"__name__": "up", "job": "x"}]
    req = server.requests[0]
    assert (req.method, req.path) == ("POST", "/api/v1/series")
    assert req.params.getall("match[]") == ['{namespace!=""}', 'up{job="x"}']
    assert (req.params["start"], req.params["end"]) == ("1565786045.323", "1565786645.000")
    assert req.headers["Accept-Encoding"] == "identity"  # no gzip CPU on Prometheus for relists


async def test_series_answer_is_streamed_across_chunks(server: FakePromHTTP) -> None:
    data = [{"__name__": f"m{i % 7}", "pod": f'p"{i}}},{{"x":"]', "ns": "ü"} for i in range(3000)]
    body = json.dumps({"status": "success", "data": data}).encode()

    async def handler(req: Recorded) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    server.handler = handler
    seen: list[dict[str, str]] = []
    async with client_for(server) as client:
        count = await client.series_foreach(["{x!=''}"], start=0, end=1, sink=seen.append)
    assert count == 3000 and seen == data


@pytest.mark.parametrize(("status", "body", "exc_type"), [
    pytest.param(400, {"status": "error", "errorType": "bad_data", "error": "parse error"},
                 errors.PrometheusBadQuery, id="bad selector"),
    pytest.param(200, '{"status":"success","data":[{"a":"b"},', errors.PrometheusBadResponse,
                 id="truncated list"),
    pytest.param(200, '{"status":"success","data":{"a":"b"}}', errors.PrometheusBadResponse,
                 id="data is not a list"),
    pytest.param(200, '{"data":[{"__name__":"up"}],"status":"success"}', None,
                 id="keys in another order still decode"),
])
async def test_series_errors(server: FakePromHTTP, status: int, body: object,
                             exc_type: type[Exception] | None) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, content_type="application/json")

    server.handler = handler
    async with client_for(server) as client:
        if exc_type is None:
            assert await client.series(["up"], start=0, end=1) == [{"__name__": "up"}]
        else:
            with pytest.raises(exc_type):
                await client.series(["up"], start=0, end=1)


async def test_identical_inflight_queries_share_one_request(server: FakePromHTTP) -> None:
    release = asyncio.Event()

    async def handler(req: Recorded) -> web.StreamResponse:
        await release.wait()
        return json_response(vector(({"q": req.params["query"]}, "1")))

    server.handler = handler
    async with client_for(server) as client:
        same = [asyncio.create_task(client.query("up")) for _ in range(5)]  # type: ignore[arg-type]
        other = asyncio.create_task(client.query("down"))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        same[0].cancel()  # one caller gives up; the others still get the answer
        release.set()
        results = await asyncio.gather(*same[1:], other)
        assert all(r[0].labels == {"q": "up"} for r in results[:-1])
        assert results[-1][0].labels == {"q": "down"}
        assert sorted(r.params["query"] for r in server.requests) == ["down", "up"]
        # Sequential identical queries are NOT cached: each one asks Prometheus again.
        await client.query("up")  # type: ignore[arg-type]
    assert len(server.requests) == 3


async def test_client_must_be_started() -> None:
    client = PrometheusClient(PrometheusSettings(url="http://127.0.0.1:1"))
    with pytest.raises(errors.PrometheusError, match="not started"):
        await client.query("up")  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "verb", "query_len"), [
    pytest.param({}, "GET", 10, id="GET"),
    pytest.param({"time": 1700000000.25}, "GET", 10, id="GET at a time"),
    pytest.param({}, "POST", 10, id="--prometheus-verb=POST"),
    pytest.param({}, "GET", 5000, id="long query POSTed"),
])
async def test_instant_queries_ask_for_identity_encoding(server: FakePromHTTP, kw: dict[str, float],
                                                         verb: str, query_len: int) -> None:
    promql = 'x{pod=~"' + "a" * query_len + '"}'
    async with client_for(server, verb=verb) as client:
        assert len(await client.query(promql, **kw)) == 1  # type: ignore[arg-type]
    req = server.requests[0]
    assert req.path == "/api/v1/query" and req.params["query"] == promql
    # no gzip: compressing answers of a few KB costs Prometheus and the adapter more than it saves
    assert req.headers["Accept-Encoding"] == "identity"


def _distinct_promql(i: int) -> str:
    # characters that form encoding must escape, so that one query's encoding is never another's
    return f'sum(rate(http_requests_total{{pod=~"web-{i}|a+b&c=d%20ü",q!="#{i}"}}[1m])) by (pod) > {i}'


@pytest.mark.timeout(30)  # 1,100+ HTTP round trips: ~0.5 s alone, more than 2 s on a loaded CI machine
async def test_more_distinct_queries_than_the_encoding_cache_holds_each_send_their_own_text(
        server: FakePromHTTP) -> None:
    async def handler(req: Recorded) -> web.StreamResponse:
        return json_response(vector(({"q": req.params["query"]}, "1")))

    server.handler = handler
    sent: list[tuple[str, str]] = []
    async with client_for(server, timeout=7.0) as client:

        async def ask(promql: str) -> None:
            samples = await client.query(promql)  # type: ignore[arg-type]
            assert samples[0].labels == {"q": promql}
            sent.append((promql, "7"))

        # 1,100 distinct queries (beyond the 1,024 kept), in batches so the test stays quick
        for start in range(0, 1100, 275):
            await asyncio.gather(*(ask(_distinct_promql(i)) for i in range(start, start + 275)))
        # The first ones again (evicted by now), then the newest (still kept).
        for i in (*range(5), 1099, 1050, 0):
            await ask(_distinct_promql(i))
    assert len(server.requests) == len(sent) == 1100 + 8
    seen = sorted((r.params["query"], r.params["timeout"]) for r in server.requests)
    assert seen == sorted(sent)
    assert all(r.params.getall("query") == [r.params["query"]] and "time" not in r.params
               for r in server.requests)


async def test_query_at_a_time_sends_that_time_every_time(server: FakePromHTTP) -> None:
    async with client_for(server) as client:
        await client.query("up")  # type: ignore[arg-type]
        await client.query("up", time=1700000000.25)  # type: ignore[arg-type]
        await client.query("up", time=1700000060.5)  # type: ignore[arg-type]
        await client.query("up")  # type: ignore[arg-type]
    assert [(r.params["query"], r.params.get("time"), r.params["timeout"]) for r in server.requests] == [
        ("up", None, "30"), ("up", "1700000000.250", "30"), ("up", "1700000060.500", "30"),
        ("up", None, "30")]


@pytest.mark.parametrize(("verb", "query_len", "method"), [
    pytest.param("GET", 10, "GET", id="GET"),
    pytest.param("POST", 10, "POST", id="--prometheus-verb=POST"),
    pytest.param("GET", 5000, "POST", id="long query POSTed"),
])
async def test_url_query_parameters_go_first_on_every_instant_query(
        server: FakePromHTTP, verb: str, query_len: int, method: str) -> None:
    promql = 'x{pod=~"' + "a" * query_len + '"}'
    url = f"{server.url}/prefix?tenant=a&empty=&tenant=b%26c"
    async with PrometheusClient(PrometheusSettings(url=url, verb=verb)) as client:
        await client.query(promql)  # type: ignore[arg-type]
        await client.query(promql)  # type: ignore[arg-type]  # the kept encoding
        await client.query(promql, time=1700000000.0)  # type: ignore[arg-type]
    base = [("tenant", "a"), ("empty", ""), ("tenant", "b&c")]
    assert [(r.method, r.path) for r in server.requests] == [(method, "/prefix/api/v1/query")] * 3
    assert [list(r.params.items()) for r in server.requests] == [
        [*base, ("query", promql), ("timeout", "30")],
        [*base, ("query", promql), ("timeout", "30")],
        [*base, ("query", promql), ("timeout", "30"), ("time", "1700000000.000")]]


async def test_a_prometheus_header_can_ask_for_gzip_and_the_gzipped_answer_decodes(server: FakePromHTTP) -> None:
    """`--prometheus-header Accept-Encoding=gzip` (e.g. across a slow link) replaces the identity default."""
    import gzip

    async def handler(req: Recorded) -> web.StreamResponse:
        body = gzip.compress(json.dumps({"status": "success", "data": {
            "resultType": "vector", "result": [{"metric": {"pod": "a"}, "value": [1700000000, "2.5"]}]}}).encode())
        return web.Response(body=body, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    server.handler = handler
    async with client_for(server, headers=(("Accept-Encoding", "gzip"),)) as client:
        samples = await client.query("up")  # type: ignore[arg-type]
    assert [(s.labels, s.value) for s in samples] == [({"pod": "a"}, 2.5)]
    assert server.requests[0].headers["Accept-Encoding"] == "gzip"
