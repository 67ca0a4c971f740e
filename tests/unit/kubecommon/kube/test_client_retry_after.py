"""A throttled or briefly failing API server, as client-go's REST client meets it: a 429 (API
Priority and Fairness under load) or a 5xx answer carrying `Retry-After: N` is retried after N
seconds, up to 10 times, for every verb (the body is replayed); without the header, or with a
value that is no whole number of seconds, the error comes back at once. No wait outlasts the
request's timeout: when the announced wait would, the 429 comes back at once with the announced
seconds in its details. A watch (and so a watch cache's LIST and WATCH) is retried the same way,
so a throttled start does not cost the cache its backoff or its objects. A GET whose connection
is reset before the answer is sent again (by aiohttp, once); other verbs never are.

A local aiohttp server answers the first requests from a script, then normally."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig
from kubecommon.kube.errors import KubeAPIError, KubeUnavailable
from kubecommon.kube.resources import ResourceInfo

from .apiserver import eventually

PODS = ResourceInfo(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
APF_TEXT = "Too many requests, please try again later."
Answer = tuple[int, dict[str, str], str]  # (status, headers, body) of one scripted answer


def throttled(n: int, retry_after: str | None = "0", *, status: int = 429, body: str = APF_TEXT) -> list[Answer]:
    headers = {"Content-Type": "text/plain; charset=utf-8"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return [(status, headers, body)] * n


def pod(name: str, rv: int) -> dict:
    return {"metadata": {"name": name, "namespace": "shop", "resourceVersion": str(rv)}}


class ScriptedServer:
    """Answers the first requests of each kind ("GET", "POST", "LIST", "WATCH") from `script`,
    then as an API server would: GET and POST echo, LIST gives pod a-0, WATCH streams pod b-0."""

    def __init__(self) -> None:
        self.script: dict[str, list[Answer]] = {}
        self.seen: list[tuple[str, bytes]] = []  # (kind, body) of every request
        self.server: TestServer | None = None

    async def start(self) -> KubeConfig:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return KubeConfig(server=str(self.server.make_url("")).rstrip("/"), token="t")

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.seen]

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        kind = request.method
        if kind == "GET" and request.path == "/api/v1/pods":
            kind = "WATCH" if request.query.get("watch") == "true" else "LIST"
        self.seen.append((kind, await request.read()))
        if self.script.get(kind):
            status, headers, body = self.script[kind].pop(0)
            return web.Response(status=status, headers=headers, text=body)
        if kind == "LIST":
            return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "5"},
                                      "items": [pod("a-0", 5)]})
        if kind == "WATCH":
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(json.dumps({"type": "ADDED", "object": pod("b-0", 6)}).encode() + b"\n")
            return response
        return web.json_response({"kind": "Echo", "method": request.method, "path": request.path},
                                 status=201 if kind == "POST" else 200)


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer()
    await server.start()
    yield server
    assert server.server is not None
    await server.server.close()


async def client_of(server: ScriptedServer, timeout: float = 1.5) -> KubeClient:
    assert server.server is not None
    client = KubeClient(KubeConfig(server=str(server.server.make_url("")).rstrip("/"), token="t"), timeout=timeout)
    await client.start()
    return client


RETRIED = [
    pytest.param(throttled(2), id="429-retry-after-0-twice"),
    pytest.param(throttled(1, status=503, body="apiserver is shutting down"), id="503-with-retry-after"),
    pytest.param(throttled(1, status=500, body="{}"), id="500-with-retry-after"),
    pytest.param(throttled(10), id="ten-429s-the-most-client-go-retries"),
    pytest.param(throttled(1, "-3"), id="negative-seconds-retry-at-once"),
]


@pytest.mark.parametrize("answers", RETRIED)
async def test_a_get_told_to_retry_after_is_retried_and_succeeds(scripted, answers):
    scripted.script["GET"] = list(answers)
    client = await client_of(scripted)
    try:
        assert (await client.get("/api/v1/namespaces/shop/configmaps/x"))["kind"] == "Echo"
        assert scripted.kinds() == ["GET"] * (len(answers) + 1)
    finally:
        await client.close()


NOT_RETRIED = [
    pytest.param(throttled(1, None), 429, id="429-without-retry-after"),
    pytest.param(throttled(1, None, status=503), 503, id="503-without-retry-after"),
    pytest.param(throttled(1, "Wed, 25 Nov 2026 07:28:00 GMT"), 429, id="http-date-is-not-seconds"),
    pytest.param(throttled(1, "1.5"), 429, id="fractional-seconds"),
    pytest.param(throttled(1, "0", status=404, body="{}"), 404, id="404-even-with-retry-after"),
    pytest.param(throttled(11), 429, id="the-eleventh-429-is-the-answer"),
]


@pytest.mark.parametrize(("answers", "code"), NOT_RETRIED)
async def test_an_answer_client_go_would_not_retry_comes_back_as_the_error(scripted, answers, code):
    scripted.script["GET"] = list(answers)
    client = await client_of(scripted)
    try:
        with pytest.raises(KubeAPIError) as raised:
            await client.get("/api/v1/namespaces/shop/configmaps/x")
        assert raised.value.code == code
        assert len(scripted.seen) == min(len(answers), 11)
    finally:
        await client.close()


async def test_a_post_throttled_by_priority_and_fairness_is_sent_again_with_the_same_body(scripted):
    scripted.script["POST"] = throttled(2)
    client = await client_of(scripted)
    body = {"kind": "TokenReview", "spec": {"token": "abc"}}
    try:
        assert (await client.post("/apis/authentication.k8s.io/v1/tokenreviews", body))["method"] == "POST"
        assert [json.loads(sent) for _, sent in scripted.seen] == [body] * 3
    finally:
        await client.close()


WAITS_PAST_THE_TIMEOUT = [
    pytest.param(throttled(1, "5"), 1, id="beyond-the-whole-timeout"),
    pytest.param(throttled(2, "1"), 2, id="beyond-what-is-left-after-one-wait"),
]


@pytest.mark.timeout(10)  # one case waits a real second: room for a loaded CI machine
@pytest.mark.parametrize(("answers", "requests"), WAITS_PAST_THE_TIMEOUT)
async def test_a_wait_past_the_request_timeout_is_not_waited_and_the_429_says_how_long(
        scripted, answers, requests):
    scripted.script["GET"] = list(answers)
    client = await client_of(scripted, timeout=1.5)  # a wait begun past it answers late, not the 429
    try:
        with pytest.raises(KubeAPIError) as raised:
            await client.get("/api/v1/namespaces/shop/configmaps/x")
        assert raised.value.code == 429
        assert raised.value.status.reason == "TooManyRequests"
        assert raised.value.status.details["retryAfterSeconds"] == int(answers[-1][1]["Retry-After"])
        assert APF_TEXT in str(raised.value)  # the server's own words, as client-go keeps them
        assert len(scripted.seen) == requests
    finally:
        await client.close()


async def test_a_watch_told_to_retry_after_starts_once_the_server_lets_it(scripted):
    scripted.script["WATCH"] = throttled(3)
    client = await client_of(scripted)
    try:
        events = [event async for event in client.watch("/api/v1/pods", {}, read_timeout=1.0)]
        assert [e["object"]["metadata"]["name"] for e in events] == ["b-0"]
        assert scripted.kinds() == ["WATCH"] * 4
    finally:
        await client.close()


async def test_a_throttled_list_and_watch_still_fill_the_cache_without_a_second_list(scripted):
    """The cache's own backoff after three failures (0.4 + 0.8 + 1.6 s) would outlast the wait."""
    scripted.script["LIST"] = throttled(3)
    scripted.script["WATCH"] = throttled(3, status=504, body="{}")
    client = await client_of(scripted)
    cache = ObjectCache(client, PODS)
    cache.start()
    try:
        await cache.wait_synced(1.0)
        await eventually(lambda: cache.get("shop", "b-0") is not None, timeout=1.0)
        assert cache.get("shop", "a-0") is not None
        assert cache.relists == 1
        assert scripted.kinds()[:8] == ["LIST"] * 4 + ["WATCH"] * 4
    finally:
        await cache.stop()
        await client.close()


class DroppingServer:
    """A raw HTTP server that drops the first `drops` connections once it has read the request
    (an API server going down mid-request), then answers {"kind": "Echo"}."""

    def __init__(self, drops: int) -> None:
        self.drops = drops
        self.requests: list[str] = []
        self.url = ""
        self._server = None

    async def __aenter__(self) -> DroppingServer:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        self._server.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head.split(b" ", 1)[0].decode())
        length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), b"0"))
        await reader.readexactly(length)
        if len(self.requests) <= self.drops:
            writer.transport.abort()  # a reset, no answer
            return
        body = b'{"kind": "Echo"}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()


DROPPED = [  # (method, whether the request is sent again)
    pytest.param("GET", True, id="get-sent-again"),
    pytest.param("POST", False, id="post-never-sent-twice"),
]


@pytest.mark.parametrize(("method", "again"), DROPPED)
async def test_a_get_whose_connection_is_lost_is_sent_again_and_a_post_never_is(method, again):
    """client-go re-sends such a GET (after 1 s, up to 10 times); aiohttp already re-sends an
    idempotent request once, at once, which this pins."""
    async with DroppingServer(drops=1) as server:
        client = KubeClient(KubeConfig(server=server.url, token="t"), timeout=1.5)
        await client.start()
        try:
            if again:
                assert (await client.request_json(method, "/api/v1/namespaces/shop/pods/x"))["kind"] == "Echo"
            else:
                with pytest.raises(KubeUnavailable):
                    await client.request_json(method, "/api/v1/namespaces/shop/pods/x", body={"a": 1})
        finally:
            await client.close()
    assert server.requests == [method] * (2 if again else 1)
