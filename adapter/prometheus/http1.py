"""A lean HTTP/1.1 client for the adapter's hottest call: one instant query per metrics request.

Why not aiohttp's `ClientSession` here (it still makes every other call: series reads, health):
measured on the same uvloop loop against the same Prometheus, a 100-sample instant query's
exchange costs aiohttp's client 620-730 µs of CPU and this client about 214 µs, and
`PrometheusClient.query` (with the answer's decoding) 788 µs against 420 µs. In
`python -m hack.bench.adapter_latency` the adapter's CPU per request under load fell from 1.73 to
1.29 ms. aiohttp spends the difference on what this call never needs: URL objects and
re-quoting, cookie jars, tracing hooks, redirect and proxy machinery, a task per response payload.

What it does: keep-alive connections over asyncio streams (TLS from the caller's `SSLContext`),
at most `max_connections` exchanges at once, a connection idle longer than `IDLE_SECONDS` closed
instead of reused (when the pool next looks at it); GET or form POST; bodies framed by
Content-Length, chunked or connection close; a byte limit enforced while reading (never more than
the limit in memory); gzip/deflate answers decoded within the same limit; one deadline per
exchange, after which the connection is dropped. A request that fails on a reused connection
before any answer arrives (the server had closed it while idle) is sent again once on a new
connection: instant queries are reads. Redirects are returned as answers (the caller hands them
to aiohttp, which follows them).

Non-goals: proxies, HTTP/2, request bodies other than forms, response streaming.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Answer", "BodyTooLarge", "BrokenAnswer", "Exchange", "IDLE_SECONDS", "Unreachable"]

#: an idle keep-alive connection older than this is closed (aiohttp's keepalive_timeout)
IDLE_SECONDS = 15.0
#: the longest status line plus header block accepted (Go's net/http serves at most 1 MiB)
_MAX_HEAD = 1024 * 1024
_READ = 256 * 1024


class Unreachable(Exception):
    """The connection could not be made, or broke before the whole answer arrived."""


class BrokenAnswer(Exception):
    """The server's bytes are not an HTTP/1.1 answer (status line, headers, chunking, encoding)."""


class BodyTooLarge(Exception):
    """The answer's body passes the caller's byte limit; `status` is the answer's status."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status} body over the limit")
        self.status = status


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    #: lower-case header names; the last of repeated headers wins
    headers: dict[str, str]
    body: bytes


class _Connection:
    __slots__ = ("reader", "writer", "idle_since", "reused", "answered")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.idle_since = 0.0
        #: taken from the idle connections for this exchange (the server may have closed it)
        self.reused = False
        #: the current exchange has received an answer's status line
        self.answered = False

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class Exchange:
    """A pool of keep-alive connections to one `host:port` (see the module docstring)."""

    def __init__(self, *, host: str, port: int, host_header: str, ssl_context: ssl.SSLContext | None,
                 headers: Iterable[tuple[str, str]], max_connections: int) -> None:
        self._host, self._port, self._ssl = host, port, ssl_context
        fixed = [("Host", host_header), *headers]
        for name, value in fixed:
            _check_header(name, value)
        self._fixed_head = "".join(f"{name}: {value}\r\n" for name, value in fixed)
        self._idle: deque[_Connection] = deque()
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False

    async def request(self, method: str, target: str, *, headers: dict[str, str], body: bytes | None,
                      max_body: int, timeout: float) -> Answer:
        """One exchange within `timeout` seconds (asyncio.TimeoutError after it)."""
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed_head}"
        for name, value in headers.items():
            _check_header(name, value)
            head += f"{name}: {value}\r\n"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        message = (head + "\r\n").encode("latin-1") + (body or b"")
        async with asyncio.timeout(timeout), self._slots:  # waiting for a slot counts too
            connection = await self._connection()
            try:
                answer, reusable = await _exchange(connection, message, max_body)
            except Unreachable:
                connection.close()
                if not connection.reused or connection.answered:
                    raise
                # the server closed a kept-alive connection while it was idle: once, on a new one
                connection = await self._connection(fresh=True)
                try:
                    answer, reusable = await _exchange(connection, message, max_body)
                except BaseException:
                    connection.close()
                    raise
            except BaseException:
                connection.close()
                raise
        self._release(connection, reusable)
        return answer

    async def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()

    async def _connection(self, *, fresh: bool = False) -> _Connection:
        now = time.monotonic()
        while self._idle and not fresh:
            connection = self._idle.pop()  # the most recently used: least likely closed by the server
            if connection.usable() and now - connection.idle_since <= IDLE_SECONDS:
                connection.reused = True
                return connection
            connection.close()
        try:
            reader, writer = await asyncio.open_connection(
                self._host, self._port, ssl=self._ssl, limit=_MAX_HEAD,
                server_hostname=self._host if self._ssl is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise Unreachable(f"cannot connect to {self._host}:{self._port}: {exc}") from None
        return _Connection(reader, writer)

    def _release(self, connection: _Connection, reusable: bool) -> None:
        now = time.monotonic()
        while self._idle and now - self._idle[0].idle_since > IDLE_SECONDS:
            self._idle.popleft().close()
        if not reusable or self._closed:
            connection.close()
            return
        connection.idle_since = now
        self._idle.append(connection)


def _check_header(name: str, value: str) -> None:
    if any(c in name for c in "\r\n:") or "\r" in value or "\n" in value:
        raise ValueError(f"header {name!r}: a line break (or a colon in the name) is not allowed")


async def _exchange(connection: _Connection, message: bytes, max_body: int) -> tuple[Answer, bool]:
    reader = connection.reader
    connection.answered = False
    try:
        connection.writer.write(message)
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            connection.answered = True
            version, status, headers = _parse_head(head)
            if status >= 200:
                break  # a 1xx (103 Early Hints) is followed by the real answer
        body, framed = await _read_body(reader, status, headers, max_body)
    except asyncio.IncompleteReadError as exc:
        raise Unreachable(f"the connection closed after {len(exc.partial)} bytes of an answer part") from None
    except asyncio.LimitOverrunError:
        raise BrokenAnswer(f"the answer's header block is longer than {_MAX_HEAD} bytes") from None
    except (OSError, ssl.SSLError) as exc:
        raise Unreachable(f"{type(exc).__name__}: {exc}") from None
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", ""):
        body = _decoded(body, encoding, max_body, status)
    keep_alive = framed and version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    return Answer(status, headers, body), keep_alive


def _parse_head(head: bytes) -> tuple[str, int, dict[str, str]]:
    lines = head[:-4].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise BrokenAnswer(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BrokenAnswer(f"malformed header line: {line[:80]!r}")
        headers[name.lower()] = value.strip()
    return version, int(code), headers


async def _read_body(reader: asyncio.StreamReader, status: int, headers: dict[str, str],
                     max_body: int) -> tuple[bytes, bool]:
    """(body, whether its end was framed, so the connection may carry the next request)."""
    if status in (204, 304):
        return b"", True
    if "transfer-encoding" in headers:
        if headers["transfer-encoding"].replace(" ", "").lower().rsplit(",", 1)[-1] != "chunked":
            raise BrokenAnswer(f"unsupported transfer encoding {headers['transfer-encoding'][:40]!r}")
        return await _read_chunked(reader, status, max_body), True
    if "content-length" in headers:
        text = headers["content-length"]
        if not text.isdigit():
            raise BrokenAnswer(f"Content-Length {text[:40]!r} is not a number")
        length = int(text)
        if length > max_body:
            raise BodyTooLarge(status)
        return await reader.readexactly(length), True
    parts: list[bytes] = []  # delimited by the connection's close
    total = 0
    while chunk := await reader.read(_READ):
        total += len(chunk)
        if total > max_body:
            raise BodyTooLarge(status)
        parts.append(chunk)
    return b"".join(parts), False


async def _read_chunked(reader: asyncio.StreamReader, status: int, max_body: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BrokenAnswer(f"chunk size {size_text[:20]!r} is not hexadecimal") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailers: none are used
            return b"".join(parts)
        total += size
        if total > max_body:
            raise BodyTooLarge(status)
        parts.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise BrokenAnswer("a chunk does not end with CRLF")


def _decoded(body: bytes, encoding: str, max_body: int, status: int) -> bytes:
    """A gzip or deflate body, decompressed to at most `max_body` bytes."""
    if encoding in ("gzip", "x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS
    else:
        raise BrokenAnswer(f"unsupported content encoding {encoding[:40]!r}")
    decompressor = zlib.decompressobj(wbits)
    try:
        out = decompressor.decompress(body, max_body + 1)
    except zlib.error as exc:
        raise BrokenAnswer(f"the {encoding} body does not decompress: {exc}") from None
    if len(out) > max_body:
        raise BodyTooLarge(status)
    return out
