"""The HTTP implementation of `PrometheusAPI`.

Instant queries, the call every metrics request makes, go over `http1`'s keep-alive pool (a third
of aiohttp's client CPU per call, measured); series reads, health and anything `http1` does not
cover (user info in the URL, compressed answers asked for, a redirect) over one pooled aiohttp
`ClientSession`, whose redirects are followed by `redirects` (credentials and configured headers
never leave `--prometheus-url`'s origin). Instant queries go as GET, or as a form POST when the URL
would exceed `max_get_url_length` (or `--prometheus-verb=POST`, or after an HTTP 414). Series
reads are always POSTed (selectors can be long) and decoded as a stream. Every call has a
deadline that is also sent to Prometheus as `timeout`, so it stops work we no longer wait for.
Identical queries in flight at the same moment share one HTTP request (singleflight).

Auth (`credentials`): bearer token file (re-read when its mtime/size changes, so rotated
service-account tokens work), basic auth, CA bundle, client certificate, extra headers (`X-Scope-OrgID`).
Every answer is bounded: an instant query's body is read in chunks and refused as soon as it
passes `--prometheus-max-answer-bytes` (before it is all in memory), then checked against its
result type (`answers`); a series answer is decoded as a stream (memory bounded by one series at
any size), and one that is not in the streamable shape obeys the same byte limit.
Errors surface as `adapter.prometheus.errors` types only; credentials never appear in messages.
Non-goals: retries (the caller decides), range queries, response caching across time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp
from multidict import CIMultiDict

from adapter.prometheus import bodies, errors, http1
from adapter.prometheus.answers import query_samples
from adapter.prometheus.api import BackendHealth, Sample, SeriesSink
from kubecommon.redirects import request_following_redirects
from adapter.prometheus.bodies import decode_body
from adapter.prometheus.credentials import authorization
from adapter.prometheus.series_stream import SeriesStreamDecoder, StreamError, check_series_item
from adapter.prometheus.settings import PrometheusSettings
from kubecommon.lru import LRUCache
from kubecommon.singleflight import SingleFlight

if TYPE_CHECKING:
    from adapter.rules.query import PromQL

__all__ = ["SCRAPE_STARTUP_GRACE", "USER_AGENT", "PrometheusClient", "decode_body", "format_time"]

log = logging.getLogger(__name__)
T = TypeVar("T")

# Socket read buffer per response: large enough that a big series answer is not throttled by
# thousands of pause/resume cycles of the transport (aiohttp's default is 64 KiB).
_READ_BUFSIZE = 1024 * 1024
#: seconds after its start before a Prometheus' scrapes cover time (5 s discovery throttle plus
#: scrape intervals up to ~55 s)
SCRAPE_STARTUP_GRACE = 60.0
# Encoded forms of recent instant queries: the same few hundred queries (one per HPA metric and
# selection) repeat every sync period, and percent-encoding a 100-name regex costs more than the
# rest of building the request.
_MAX_ENCODED_QUERIES = 1024
USER_AGENT = "prom-autoscaler-adapter"


class PrometheusClient:
    """`PrometheusAPI` over HTTP. `await start()` before use, `await close()` after."""

    def __init__(self, settings: PrometheusSettings) -> None:
        self.settings = settings
        self._session: aiohttp.ClientSession | None = None
        self._flights: SingleFlight[tuple[str, float | None], list[Sample]] = SingleFlight()
        parts = urlsplit(settings.url)
        # `--prometheus-url` may carry a path prefix and query parameters of its own: both go in
        # front of every API call's, encoded once here.
        self._endpoint = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        self._base_query = urlencode(parse_qsl(parts.query, keep_blank_values=True))
        self._authorization = authorization(settings)
        # Every call has the same deadline (`--prometheus-timeout`): its two forms are built once.
        self._timeout = aiohttp.ClientTimeout(total=settings.timeout)
        self._timeout_param = _fmt_seconds(settings.timeout)
        self._encoded_queries: LRUCache[str, str] = LRUCache(_MAX_ENCODED_QUERIES)
        #: instant queries' own client (`http1`), when the URL and headers allow it; else aiohttp's
        self._exchange: http1.Exchange | None = None
        self._target_prefix = parts.path.rstrip("/")
        #: headers only `--prometheus-url`'s origin gets: credentials and every --prometheus-header
        self._sensitive = frozenset({"authorization", *(name.lower() for name, _ in settings.headers)})

    async def start(self) -> None:
        if self._session is not None:
            return
        # Fail at start, not at the first request, on unreadable credential or TLS files.
        self._auth_headers()
        ssl_context: Any = None
        s = self.settings
        if s.url.startswith("https://"):
            from kubecommon.tls import client_ssl_context

            try:
                ssl_context = client_ssl_context(
                    ca_file=s.ca_file, cert_file=s.client_cert_file, key_file=s.client_key_file,
                    insecure=s.insecure_skip_tls_verify,
                )
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                raise errors.PrometheusError(
                    f"cannot load the TLS files for Prometheus (--prometheus-ca-file, "
                    f"--prometheus-client-tls-cert-file/-key-file): {exc}") from None
        connector = aiohttp.TCPConnector(limit=s.max_connections, ssl=ssl_context)
        # identity unless --prometheus-header says otherwise: compressing answers costs Prometheus
        # and the adapter more CPU than the bytes saved, for instant queries of a few KB and for
        # series reads alike (gzip of a large series answer costs about as much as producing it).
        headers = CIMultiDict(s.headers)
        headers.setdefault("Accept-Encoding", "identity")
        headers.setdefault("User-Agent", USER_AGENT)
        # The configured headers go with each request, not as the session's defaults, so that a
        # redirect to another origin can leave them behind (`redirects`).
        defaults = {name: headers[name] for name in ("Accept-Encoding", "User-Agent")}
        self._session = aiohttp.ClientSession(
            connector=connector, headers=defaults, raise_for_status=False,
            read_bufsize=_READ_BUFSIZE,
        )
        self._exchange = _instant_query_exchange(s.url, headers, ssl_context, s.max_connections)

    async def close(self) -> None:
        session, self._session = self._session, None
        exchange, self._exchange = self._exchange, None
        if exchange is not None:
            await exchange.close()
        if session is not None:
            await session.close()

    async def __aenter__(self) -> PrometheusClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- PrometheusAPI ----------------------------------------------------------------------
    async def query(self, promql: PromQL, *, time: float | None = None) -> list[Sample]:
        text = str(promql)
        return await self._flights.do((text, time), lambda: self._query(text, time))

    async def series(
        self, matchers: Sequence[str], *, start: float, end: float
    ) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        await self.series_foreach(matchers, start=start, end=end, sink=out.append)
        return out

    async def series_foreach(
        self, matchers: Sequence[str], *, start: float, end: float, sink: SeriesSink
    ) -> int:
        path = "/api/v1/series"
        params = [("match[]", m) for m in matchers]
        params += [("start", format_time(start)), ("end", format_time(end))]
        decoder = SeriesStreamDecoder(sink, max_fallback=self.settings.max_answer_bytes)

        async def read(resp: aiohttp.ClientResponse) -> int:
            if resp.status != 200:
                self.raise_for_document(path, resp.status, await bodies.read_error_body(resp))
            async for chunk in resp.content.iter_chunked(bodies.CHUNK):
                decoder.feed(chunk)
            document = decoder.finish()
            if document is None:
                return decoder.count
            # Not in the streamable shape (e.g. keys in another order): decode it whole.
            data = self.raise_for_document(path, resp.status, document)
            if not isinstance(data, list):
                raise errors.PrometheusBadResponse("series data is not a list of objects",
                                                   path=path)
            for item in data:
                check_series_item(item)
            for item in data:
                sink(item)
            return len(data)

        try:
            return await self._request(path, urlencode(params), read, force_post=True)
        except StreamError as exc:
            raise errors.PrometheusBadResponse(str(exc), path=path) from None

    async def health(self) -> BackendHealth:
        """`/-/ready`, then `/api/v1/status/runtimeinfo` for the data coverage: its start time
        (whatever happened before it, a restart's gap or empty storage, is not scraped data) plus
        `SCRAPE_STARTUP_GRACE`, since a started Prometheus scrapes nothing until its service
        discovery's first update (throttled to 5 s) and a scrape interval have passed.

        A backend that serves neither (Thanos, Mimir, a proxy) says nothing (None), and one that
        cannot be reached is not ready.
        """
        try:
            ready, unavailable = await self._request("/-/ready", "", bodies.ready_from_status, get_only=True)
            if ready is False:
                return BackendHealth(ready=False, reachable=not unavailable)
            started = await self._request("/api/v1/status/runtimeinfo", "", bodies.status_field(
                lambda data: bodies.rfc3339(data.get("startTime"))), get_only=True)
        except errors.PrometheusError as err:
            log.info("prometheus health: %s", err)
            unreachable = isinstance(err, (errors.PrometheusUnreachable, errors.PrometheusTimeout))
            return BackendHealth(ready=False, reachable=False if unreachable else None)
        return BackendHealth(ready=ready, reachable=True,
                             covered_since=None if started is None else started + SCRAPE_STARTUP_GRACE)

    # -- internals --------------------------------------------------------------------------
    async def _query(self, promql: str, at: float | None) -> list[Sample]:
        path = "/api/v1/query"
        if at is None:
            encoded = self._encoded_queries.get_or_compute(
                promql, lambda: urlencode([("query", promql), ("timeout", self._timeout_param)]))
        else:
            encoded = urlencode([("query", promql), ("timeout", self._timeout_param),
                                 ("time", format_time(at))])
        if self._exchange is not None:
            return await self._exchanged_query(self._exchange, path, encoded, promql)
        return await self._session_query(path, encoded, promql)

    async def _session_query(self, path: str, encoded: str, promql: str) -> list[Sample]:
        """An instant query through aiohttp's client (which follows redirects)."""
        async def read(resp: aiohttp.ClientResponse) -> list[Sample]:
            if resp.status != 200:  # raise_for_document raises for every status but 200
                self.raise_for_document(path, resp.status, await bodies.read_error_body(resp))
            raw = await bodies.read_limited(resp, self.settings.max_answer_bytes, path, promql)
            # the body is passed in, not closed over: a cell holding `raw` outlived a failed call in a
            # reference cycle with its traceback (tests/unit/adapter/server/test_failure_memory.py)
            return query_samples(raw, path, lambda body: self.raise_for_document(path, 200, decode_body(body)))

        return await self._request(path, encoded, read)

    async def _exchanged_query(self, exchange: http1.Exchange, path: str, params: str,
                               promql: str) -> list[Sample]:
        """An instant query through `http1` (the same verb choice, 414 fallback, deadline, byte
        limit and error types as `_request`); a redirect goes to aiohttp, which follows it."""
        encoded = self._with_base_query(params)
        limit = self.settings.max_answer_bytes
        headers = self._auth_headers()
        for post in self._verbs(path, encoded):
            if post:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            try:
                answer = await exchange.request(
                    "POST" if post else "GET", self._target_prefix + path if post
                    else f"{self._target_prefix}{path}?{encoded}", headers=headers,
                    body=encoded.encode() if post else None, max_body=limit,
                    max_error_body=bodies.MAX_ERROR_BODY, timeout=self.settings.timeout)
            except asyncio.TimeoutError:
                raise self._timed_out(path) from None
            except http1.Unreachable as exc:
                raise errors.PrometheusUnreachable(str(exc), path=path) from None
            except http1.BrokenAnswer as exc:
                raise errors.PrometheusBadResponse(f"broken answer: {exc}", path=path) from None
            except http1.BodyTooLarge:
                raise bodies.too_large(limit, path, promql) from None
            except http1.BadHeader as exc:  # a credential file whose text holds a line break
                raise errors.PrometheusError(f"cannot send the request: {exc}", path=path) from None
            if answer.status == 414 and not post:
                continue  # URI too long for something in between: retry as POST
            if 300 <= answer.status < 400 and "location" in answer.headers:
                log.warning("prometheus %s answered a redirect (HTTP %d): instant queries now go through "
                            "aiohttp's client, which follows it; set --prometheus-url to where it leads",
                            path, answer.status)
                self._exchange = None
                await exchange.close()
                return await self._session_query(path, params, promql)
            if answer.status != 200:
                self.raise_for_document(path, answer.status, decode_body(answer.body))  # its first 64 KiB
            return query_samples(answer.body, path,
                                 lambda body: self.raise_for_document(path, 200, decode_body(body)))
        raise AssertionError("unreachable")  # pragma: no cover

    def _with_base_query(self, params: str) -> str:
        """A call's form-encoded parameters with `--prometheus-url`'s own in front."""
        return f"{self._base_query}&{params}" if self._base_query else params

    def _verbs(self, path: str, encoded: str, *, force_post: bool = False,
               get_only: bool = False) -> tuple[bool, ...]:
        """The attempts of a call, True for a form POST: POST alone when asked for or when the GET
        URL would be too long, else GET and, if something in between answers 414, POST."""
        if not get_only and (force_post or self.settings.verb == "POST" or len(self._endpoint) + len(path) + 1
                             + len(encoded) > self.settings.max_get_url_length):
            return (True,)
        return (False, True)

    def _timed_out(self, path: str) -> errors.PrometheusTimeout:
        return errors.PrometheusTimeout(f"no answer within {self.settings.timeout:g}s", path=path)

    async def _request(
        self, path: str, params: str, read: Callable[[aiohttp.ClientResponse], Awaitable[T]],
        *, force_post: bool = False, get_only: bool = False,
    ) -> T:
        """`params` is the call's form-encoded parameters (`--prometheus-url`'s own go first)."""
        if self._session is None:
            raise errors.PrometheusError("client not started", path=path)
        url = self._endpoint + path
        encoded = self._with_base_query(params)
        headers = {**dict(self.settings.headers), **self._auth_headers()}
        try:
            for attempt_post in self._verbs(path, encoded, force_post=force_post, get_only=get_only):
                if attempt_post:
                    headers["Content-Type"] = "application/x-www-form-urlencoded"
                ctx = request_following_redirects(
                    self._session, "POST" if attempt_post else "GET",
                    url if attempt_post else f"{url}?{encoded}", data=encoded if attempt_post else None,
                    headers=headers, sensitive=self._sensitive, timeout=self._timeout)
                async with ctx as resp:
                    if resp.status == 414 and not attempt_post:
                        continue  # URI too long for something in between: retry as POST
                    return await read(resp)
            raise AssertionError("unreachable")  # pragma: no cover
        except asyncio.TimeoutError:
            raise self._timed_out(path) from None
        except aiohttp.ClientConnectionError as exc:
            raise errors.PrometheusUnreachable(f"{type(exc).__name__}: {exc}", path=path) from None
        except aiohttp.ClientPayloadError as exc:
            raise errors.PrometheusBadResponse(f"broken answer: {exc}", path=path) from None
        except aiohttp.ClientError as exc:  # e.g. a malformed URL or too many redirects
            raise errors.PrometheusError(f"{type(exc).__name__}: {exc}", path=path) from None

    def _auth_headers(self) -> dict[str, str]:
        """A fresh dict (the caller adds per-request headers to it)."""
        if self._authorization is None:
            return {}
        return {"Authorization": self._authorization.get()}

    @staticmethod
    def raise_for_document(path: str, status: int, body: Any) -> Any:
        """Return `data` of a success document, else raise the typed error the client raises for
        that answer (the conformance runner maps status and body to errors through it too)."""
        if isinstance(body, dict) and body.get("status") == "success" and status == 200:
            if "data" not in body:
                raise errors.PrometheusBadResponse("success without data", path=path)
            if body.get("warnings"):
                log.warning("prometheus %s warnings: %s", path, body["warnings"])
            return body["data"]
        error_type, message = "", ""
        if isinstance(body, dict):
            error_type = str(body.get("errorType") or "")
            message = str(body.get("error") or "")
        elif isinstance(body, str):
            message = body.strip()[:500]
        message = message or f"unexpected answer (HTTP {status})"
        if error_type in ("timeout", "canceled"):
            raise errors.PrometheusTimeout(f"{error_type}: {message}", path=path)
        if status in (400, 422) or error_type in ("bad_data", "execution"):
            raise errors.PrometheusBadQuery(message, path=path, error_type=error_type)
        if status != 200:
            raise errors.PrometheusHTTPError(message, path=path, status=status,
                                             error_type=error_type)
        raise errors.PrometheusBadResponse(message, path=path)


def _instant_query_exchange(url: str, headers: CIMultiDict[str], ssl_context: Any,
                            max_connections: int) -> http1.Exchange | None:
    """`http1`'s pool for instant queries, unless the URL or headers need aiohttp's client: user
    info in the URL, an answer encoding other than identity asked for, or a path that is not
    already percent-encoded."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.username is not None or parts.hostname is None \
            or headers.get("Accept-Encoding", "").strip().lower() != "identity" \
            or any(c in parts.path for c in " \t\r\n"):
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return http1.Exchange(host=parts.hostname, port=port, host_header=parts.netloc,
                              ssl_context=ssl_context, headers=list(headers.items()),
                              max_connections=max_connections)
    except ValueError:  # a header aiohttp would refuse too: let it say so
        return None


def _fmt_seconds(value: float) -> str:
    # Plain seconds: Prometheus rejects fractional Go durations such as "2.5s".
    return f"{value:.3f}".rstrip("0").rstrip(".")


def format_time(value: float) -> str:
    """A `start`/`end`/`time` parameter: millisecond precision, as prometheus-adapter sends it
    (e.g. `1565786045.323`)."""
    return f"{value:.3f}"
