"""`adapter.prometheus.http1` against a raw asyncio server that writes exact bytes: body framing
(Content-Length, chunked, connection close), the byte limit, keep-alive reuse and its one retry,
the pool's bound, deadlines, compressed answers and malformed HTTP."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from adapter.prometheus import http1

#: the answer writer for one request: (request head, connection's request number, writer)
Responder = Callable[[bytes, int, asyncio.StreamWriter], Awaitable[None]]


def fixed(raw: bytes) -> Responder:
    async def respond(_: bytes, __: int, writer: asyncio.StreamWriter) -> None:
        writer.write(raw)
    return respond


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@dataclass
class RawServer:
    """Counts connections and requests; answers each request with `respond`."""

    respond: Responder = field(default=fixed(OK))
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    heads: list[bytes] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    async def start(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        number = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.heads.append(head + await reader.readexactly(length))
                number += 1
                await self.respond(head, number, writer)
                await writer.drain()
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[RawServer]:
    srv = await RawServer().start()
    yield srv
    await srv.stop()


_POOLS: list[http1.Exchange] = []


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    while _POOLS:
        await _POOLS.pop().close()


def exchange(server: RawServer, max_connections: int = 8,
             headers: tuple[tuple[str, str], ...] = (("Accept-Encoding", "identity"),)) -> http1.Exchange:
    pool = http1.Exchange(host="127.0.0.1", port=server.port, host_header=f"127.0.0.1:{server.port}",
                          ssl_context=None, headers=headers, max_connections=max_connections)
    _POOLS.append(pool)
    return pool


async def get(pool: http1.Exchange, *, max_body: int = 1 << 20, timeout: float = 5.0,
              headers: dict[str, str] | None = None) -> http1.Answer:
    return await pool.request("GET", "/api/v1/query?query=up", headers=headers or {}, body=None,
                              max_body=max_body, max_error_body=max_body, timeout=timeout)


async def test_the_request_is_http11_with_host_and_the_fixed_headers(server: RawServer) -> None:
    pool = exchange(server)
    answer = await pool.request("POST", "/prefix/api/v1/query", headers={"Authorization": "Bearer t"},
                                body=b"query=up", max_body=100, max_error_body=100, timeout=5)
    assert (answer.status, answer.body) == (200, b"ok")
    assert server.heads[0] == (f"POST /prefix/api/v1/query HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                               "Accept-Encoding: identity\r\nAuthorization: Bearer t\r\n"
                               "Content-Length: 8\r\n\r\nquery=up").encode()
    await pool.close()


async def test_keep_alive_reuses_one_connection(server: RawServer) -> None:
    pool = exchange(server)
    for _ in range(5):
        assert (await get(pool)).body == b"ok"
    assert server.connections == 1
    await pool.close()


@pytest.mark.parametrize("raw", [
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"3;ext=1\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nX-Trailer: y\r\n\r\n", id="chunked, extension, trailer"),
    pytest.param(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
                 id="after a 1xx"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(gzip.compress(b'{"a":1}')), gzip.compress(b'{"a":1}')), id="gzip"),
])
async def test_bodies_are_read_whole_in_every_framing(server: RawServer, raw: bytes) -> None:
    server.respond = fixed(raw)
    pool = exchange(server)
    assert (await get(pool)).body == b'{"a":1}'
    assert (await get(pool)).body == b'{"a":1}'
    assert server.connections == 1
    await pool.close()


async def test_a_body_ended_by_close_is_read_and_its_connection_not_reused(server: RawServer) -> None:
    async def close_delimited(_: bytes, __: int, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 300_000)
        await writer.drain()
        writer.close()
    server.respond = close_delimited
    pool = exchange(server)
    assert len((await get(pool)).body) == 300_000
    assert len((await get(pool)).body) == 300_000
    assert server.connections == 2
    await pool.close()


@pytest.mark.parametrize("raw", [
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n" + b"x" * 101, id="content-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + b"x" * 64 + b"\r\n40\r\n"
                 + b"x" * 64 + b"\r\n0\r\n\r\n", id="chunked"),
    pytest.param(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 101, id="ended by close"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(gzip.compress(b"x" * 10_000)), gzip.compress(b"x" * 10_000)), id="gzip bomb"),
])
async def test_a_body_over_the_limit_is_refused_and_the_connection_dropped(server: RawServer, raw: bytes) -> None:
    server.respond = fixed(raw)
    pool = exchange(server)
    with pytest.raises(http1.BodyTooLarge):
        await get(pool, max_body=100)
    server.respond = fixed(OK)
    assert (await get(pool)).body == b"ok"
    assert server.connections == 2
    await pool.close()


async def test_a_kept_alive_connection_the_server_dropped_is_retried_once_on_a_new_one(server: RawServer) -> None:
    async def one_per_connection(_: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        if number == 1:
            writer.write(OK)
        else:  # the second request on a connection: closed unanswered, as an idle timeout does
            writer.transport.abort()
    server.respond = one_per_connection
    pool = exchange(server)
    for _ in range(3):
        assert (await get(pool)).body == b"ok"
    assert server.connections == 3
    await pool.close()


async def test_the_retry_is_made_once(server: RawServer) -> None:
    async def keep_first_open(head: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        if number == 1 and server.connections == 1:
            writer.write(OK)
        else:
            writer.transport.abort()
    server.respond = keep_first_open
    pool = exchange(server)
    assert (await get(pool)).body == b"ok"
    with pytest.raises(http1.Unreachable):
        await get(pool)
    assert server.connections == 2  # the reused one and one retry, no more


async def test_an_answer_cut_after_its_first_bytes_is_not_sent_again(server: RawServer) -> None:
    async def half_on_reuse(_: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        if number == 1:
            writer.write(OK)
        else:  # the server did take this request: it started answering
            writer.write(b"HTTP/1.1 50")
            await writer.drain()
            writer.transport.abort()
    server.respond = half_on_reuse
    pool = exchange(server)
    await get(pool)
    with pytest.raises(http1.Unreachable, match="11 bytes") as caught:
        await get(pool)
    assert len(server.heads) == 2 and server.connections == 1
    # the error keeps no part of the answer alive (a cut-short 16 MiB body would stay with it)
    assert caught.value.__context__ is None and caught.value.__cause__ is None


async def test_a_new_connection_closed_unanswered_is_unreachable_not_retried(server: RawServer) -> None:
    async def drop(_: bytes, __: int, writer: asyncio.StreamWriter) -> None:
        writer.transport.abort()
    server.respond = drop
    pool = exchange(server)
    with pytest.raises(http1.Unreachable):
        await get(pool)
    assert server.connections == 1
    await pool.close()


async def test_a_refused_connection_is_unreachable() -> None:
    srv = await RawServer().start()
    await srv.stop()
    await asyncio.sleep(0)
    with pytest.raises(http1.Unreachable, match="cannot connect"):
        await get(exchange(srv))


async def test_the_deadline_covers_the_exchange_and_drops_its_connection(server: RawServer) -> None:
    async def slow_first(_: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        if number == 1 and server.connections == 1:
            await asyncio.sleep(1.0)
        writer.write(OK)
    server.respond = slow_first
    pool = exchange(server)
    with pytest.raises(TimeoutError):
        await get(pool, timeout=0.1)
    assert (await get(pool)).body == b"ok"
    assert server.connections == 2  # the late answer on the first connection is never read as this one's
    await pool.close()


async def test_at_most_max_connections_exchanges_at_once(server: RawServer) -> None:
    async def slow(_: bytes, __: int, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.05)
        writer.write(OK)
    server.respond = slow
    pool = exchange(server, max_connections=2)
    answers = await asyncio.gather(*(get(pool) for _ in range(6)))
    assert [a.body for a in answers] == [b"ok"] * 6
    assert server.most_open == 2
    await pool.close()


async def test_idle_connections_older_than_the_idle_limit_are_not_reused(
        server: RawServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "IDLE_SECONDS", 0.05)
    pool = exchange(server)
    await get(pool)
    await asyncio.sleep(0.1)
    await get(pool)
    assert server.connections == 2
    await pool.close()


@pytest.mark.parametrize(("raw", "message"), [
    (b"SPDY/3 200 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "hexadecimal"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n", "CRLF"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "transfer encoding"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx", "content encoding"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", "decompress"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", "status line"),
    ("HTTP/1.1 2\u00b20 OK\r\n\r\n".encode("latin-1"), "status line"),
    ("HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n".encode("latin-1"), "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "conflicting content-length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", "both"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "transfer encoding"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "hexadecimal"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n", "hexadecimal"),
    (b"HTTP/1.1 103 Early Hints\r\n\r\n" * 9, "informational"),
])
async def test_malformed_http_is_a_broken_answer_naming_the_part(server: RawServer, raw: bytes,
                                                                 message: str) -> None:
    server.respond = fixed(raw)
    with pytest.raises(http1.BrokenAnswer, match=message):
        await get(exchange(server))


async def test_a_header_value_with_a_line_break_is_refused_before_sending(server: RawServer) -> None:
    with pytest.raises(http1.BadHeader, match="line break"):
        await get(exchange(server), headers={"Authorization": "Bearer a\r\nX-Evil: 1"})
    with pytest.raises(http1.BadHeader, match="line break"):
        http1.Exchange(host="h", port=1, host_header="h", ssl_context=None, headers=[("X-A", "b\nc")],
                       max_connections=1)
    assert server.connections == 0


@pytest.mark.parametrize("raw", [
    pytest.param(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", id="Connection: close"),
    pytest.param(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", id="HTTP/1.0"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokSTALE", id="bytes after the body"),
])
async def test_a_connection_is_reused_only_after_a_clean_http11_answer(server: RawServer, raw: bytes) -> None:
    server.respond = fixed(raw)
    pool = exchange(server)
    assert (await get(pool)).body == b"ok"
    server.respond = fixed(OK)
    assert (await get(pool)).body == b"ok"
    assert server.connections == 2


async def test_bytes_that_arrive_on_an_idle_connection_are_never_read_as_an_answer(server: RawServer) -> None:
    async def then_timeout(_: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        writer.write(OK if number == 1 else b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwrong")
        if number == 1:  # a proxy's idle timeout: 408 and close, unasked
            await writer.drain()
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
    server.respond = then_timeout
    pool = exchange(server)
    assert (await get(pool)).body == b"ok"
    await asyncio.sleep(0.05)
    server.respond = fixed(OK)
    assert (await get(pool)).body == b"ok"
    assert server.connections == 2


async def test_an_error_answer_is_cut_at_the_error_limit_and_its_connection_dropped(server: RawServer) -> None:
    server.respond = fixed(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 300\r\n\r\n" + b"e" * 300)
    pool = exchange(server)
    answer = await pool.request("GET", "/", headers={}, body=None, max_body=100, max_error_body=50, timeout=5)
    assert (answer.status, answer.body) == (503, b"e" * 50)
    server.respond = fixed(OK)
    assert (await get(pool)).body == b"ok"
    assert server.connections == 2


async def test_a_cancelled_exchange_drops_its_connection_and_frees_its_slot(server: RawServer) -> None:
    async def slow_first(_: bytes, number: int, writer: asyncio.StreamWriter) -> None:
        if server.connections == 1:
            await asyncio.sleep(0.3)  # the late answer must never reach the next request
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
        else:
            writer.write(OK)
    server.respond = slow_first
    pool = exchange(server, max_connections=1)
    waiting = asyncio.create_task(get(pool))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (await get(pool, timeout=1.0)).body == b"ok"  # the one slot is free again
    assert server.connections == 2


async def test_headers_given_for_a_request_or_a_host_header_replace_the_defaults(server: RawServer) -> None:
    pool = exchange(server, headers=(("Host", "prometheus.example"), ("Authorization", "Bearer static"),
                                     ("X-Scope-OrgID", "team-a")))
    await get(pool, headers={"authorization": "Bearer from-file"})
    lines = server.heads[0].split(b"\r\n")
    assert lines[1:4] == [b"Host: prometheus.example", b"X-Scope-OrgID: team-a", b"authorization: Bearer from-file"]
    assert sum(line.lower().startswith(b"host:") for line in lines) == 1


@pytest.mark.parametrize(("hostname", "port", "scheme", "expected"), [
    ("prometheus.monitoring.svc.cluster.local.", 9090, "https",
     ("prometheus.monitoring.svc.cluster.local", "prometheus.monitoring.svc.cluster.local:9090")),
    ("prom", 443, "https", ("prom", "prom")),
    ("prom", None, "http", ("prom", "prom")),
    ("prom", 443, "http", ("prom", "prom:443")),
    ("::1", 9090, "http", ("::1", "[::1]:9090")),
])
def test_host_names_follow_aiohttp(hostname: str, port: int | None, scheme: str,
                                   expected: tuple[str, str]) -> None:
    """The certificate is checked against the name without a fully qualified name's final dot."""
    assert http1.host_names(hostname, port, scheme) == expected
