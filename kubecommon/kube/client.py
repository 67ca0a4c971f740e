"""Async Kubernetes REST client on aiohttp: JSON GET/POST and streamed watches.

Job: one pooled session per API server identity; bearer tokens (static or a rotating token
file re-read every minute), client certificates, CA verification, the cluster's proxy-url,
the user's impersonation headers, kubeconfig `exec` plugins (token or client certificate, re-run
without blocking the event loop when expired or answered 401); non-2xx answers become
`KubeAPIError` carrying the server's typed `StatusError`; transport failures and timeouts
become `KubeUnavailable`. When the kubeconfig's server is plain http, the loader left the user's
credentials out (as kubectl does); `start()` says so once, naming them and the server, so a 401/403
from an http proxy is understood. A `KubeConfig` built in code is sent as given, as client-go's
rest.Config is. Watch streams are split into JSON events without aiohttp's line-size
limit (one event can be a large object).

Retries follow client-go's REST client: an answer 429 (API Priority and Fairness under load) or
5xx that carries `Retry-After: <seconds>` is sent again after that many seconds, at most 10 times,
whatever the verb (the body is bytes, replayed as is); a wait that would outlast the request's
timeout (a watch: its read timeout) is not begun, and the answer comes back as the error with
`retryAfterSeconds` in its details. A non-JSON text answer (APF's plain-text 429) becomes the
error's message, as in client-go.

Non-goals: other retries (callers decide; aiohttp re-sends an idempotent request once when a
pooled connection turns out closed), caching (cache.py), create/delete helpers (POST, PUT and
PATCH exist for reviews, /scale, status and events).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from multidict import CIMultiDict

from kubecommon.kube.config import KubeConfig
from kubecommon.kube.errors import KubeAPIError, KubeUnavailable
from kubecommon.kube.exec_auth import ExecCredential, ExecCredentials, ExecPluginError
from kubecommon.status import status_error_from_dict
from kubecommon.tls import client_ssl_context

__all__ = ["KubeClient"]

_log = logging.getLogger(__name__)
_TOKEN_REFRESH_SECONDS = 60.0
_MAX_EVENT_BYTES = 64 * 1024 * 1024
#: client-go's rest.Request maxRetries: how often an answer with Retry-After is followed
_MAX_RETRIES = 10
#: what Go's strconv.Atoi reads: client-go honours no other Retry-After form (no HTTP-date)
_WHOLE_SECONDS = re.compile(r"[+-]?[0-9]+")
#: client-go's maxUnstructuredResponseTextBytes: the most of a text answer kept as the message
_MAX_TEXT_BYTES = 2048


class KubeClient:
    def __init__(self, config: KubeConfig, *, timeout: float = 10.0,
                 user_agent: str = "prom-autoscaler-adapter",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._timeout = timeout
        self._user_agent = user_agent
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None
        self._token: str | None = config.token
        self._token_read_at = float("-inf")
        self._exec = ExecCredentials(config.exec_plugin) if config.exec_plugin else None
        self._session_cert: tuple[str | None, str | None] = (config.client_cert_file, config.client_key_file)
        self._retired: set[aiohttp.ClientSession] = set()  # pools of a replaced exec certificate

    async def start(self) -> None:
        cfg = self.config
        if cfg.unsent_credentials:  # said once, at start: why a plain-http server answers 401/403
            _log.warning("kubeconfig %s: server %s is plain http, so the user's credentials (%s) are not used: "
                         "credentials are not sent over plain http (kubectl does the same), requests arrive "
                         "anonymous and may be refused (401/403); to authenticate, make the cluster's server an "
                         "https:// URL", cfg.source, cfg.server, ", ".join(cfg.unsent_credentials))
        await self._open_session(*self._session_cert)

    async def _open_session(self, cert_file: str | None, key_file: str | None) -> None:
        cfg = self.config
        ssl_ctx = client_ssl_context(ca_pem=cfg.ca_pem, cert_file=cert_file, key_file=key_file,
                                     insecure=cfg.insecure)
        connector = aiohttp.TCPConnector(ssl=ssl_ctx, limit=64) if cfg.server.startswith("https") \
            else aiohttp.TCPConnector(limit=64)
        old, self._session_cert = self._session, (cert_file, key_file)
        headers = CIMultiDict([("User-Agent", self._user_agent), *cfg.impersonation])
        self._session = aiohttp.ClientSession(connector=connector, headers=headers)
        if old is not None:  # requests in flight on it finish; it closes after two timeouts
            self._retired.add(old)
            asyncio.get_running_loop().call_later(2 * self._timeout, self._close_retired, old)

    def _close_retired(self, session: aiohttp.ClientSession) -> None:
        if session in self._retired:
            self._retired.discard(session)
            asyncio.ensure_future(session.close())

    async def _exec_credential(self, timeout: float | None = None) -> ExecCredential | None:
        """The exec plugin's current credential (None without a plugin), waited for no longer than
        `timeout` (the request's; the plugin keeps running for later requests); a new client
        certificate gets a new connection pool."""
        if self._exec is None:
            return None
        wait = timeout or self._timeout
        try:
            async with asyncio.timeout(wait):
                credential = await self._exec.current()
        except ExecPluginError as err:
            raise KubeUnavailable(str(err)) from err
        except TimeoutError:
            raise KubeUnavailable(f"exec plugin {self._exec.plugin.command!r} gave no credential "
                                  f"within {wait:.3g} s") from None
        cert = (credential.client_cert_file, credential.client_key_file)
        if credential.client_cert_file and cert != self._session_cert:
            await self._open_session(*cert)
        return credential

    async def close(self) -> None:
        if self._exec is not None:
            await self._exec.close()
        for retired in self._retired:
            await retired.close()
        self._retired.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def bearer_token(self) -> str | None:
        """The bearer token this client presents to the API server (a static token, the current
        one of a token file, or an exec plugin's), for a caller that must prove the same identity
        to a server that delegates to the API server (TokenReview); None when it has none (client
        certificates or basic auth)."""
        credential = await self._exec_credential()
        if credential is not None and credential.token:
            return credential.token
        return self._current_token()

    def _headers(self, credential: ExecCredential | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = credential.token if credential is not None and credential.token else self._current_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif self.config.username is not None:
            raw = f"{self.config.username}:{self.config.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return headers

    def _current_token(self) -> str | None:
        path = self.config.token_file
        if not path or self._clock() - self._token_read_at < _TOKEN_REFRESH_SECONDS:
            return self._token
        try:
            token = Path(path).read_text().strip()
        except OSError as err:
            _log.warning("cannot read token file %s: %s (keeping the previous token)", path, err)
            return self._token
        if not token:  # client-go refuses an empty read and keeps the token it had
            _log.warning("token file %s is empty (keeping the previous token)", path)
            return self._token
        self._token, self._token_read_at = token, self._clock()
        return self._token

    def _request_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.config.tls_server_name:
            kwargs["server_hostname"] = self.config.tls_server_name
        if self.config.proxy_url:
            kwargs["proxy"] = self.config.proxy_url
        return kwargs

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("KubeClient.start() was not awaited")
        return self._session

    async def request_json(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                           body: Any = None, timeout: float | None = None,
                           content_type: str = "application/json") -> dict[str, Any]:
        """One request (re-sent as client-go re-sends it, all within `timeout`); returns the
        decoded JSON object or raises KubeAPIError/KubeUnavailable."""
        loop = asyncio.get_running_loop()
        total = timeout or self._timeout
        deadline = loop.time() + total
        data = None if body is None else _encode(body)
        reauthenticated, retries = False, 0
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise KubeUnavailable(f"{method} {path}: no answer within {total:g} s")
            credential = await self._exec_credential(left)
            code, answer_headers, raw = await self._send(method, path, params, data, content_type,
                                                         credential, left)
            if code == 401 and credential is not None and self._exec is not None and not reauthenticated:
                reauthenticated = True
                self._exec.invalidate(credential)  # client-go: a 401 re-runs the plugin once
                continue
            wait = _retry_wait(code, answer_headers, retries, deadline - loop.time())
            if wait is None:
                return self._decode(method, path, code, raw, answer_headers)
            retries += 1
            _log.debug("%s %s: HTTP %d with Retry-After %ds, retry %d of %d", method, path, code, wait,
                       retries, _MAX_RETRIES)
            await asyncio.sleep(wait)

    async def _send(self, method: str, path: str, params: Mapping[str, str] | None, data: bytes | None,
                    content_type: str, credential: ExecCredential | None,
                    timeout: float) -> tuple[int, Mapping[str, str], bytes]:
        """One attempt: (status, headers, body) of the answer, or KubeUnavailable."""
        headers = self._headers(credential)
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            async with self.session.request(method, self.config.server + path, params=params, data=data,
                                            headers=headers, timeout=aiohttp.ClientTimeout(total=timeout),
                                            **self._request_kwargs()) as resp:
                return resp.status, resp.headers, await resp.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
            raise KubeUnavailable(f"{method} {path}: {type(err).__name__}: {err}") from err

    @staticmethod
    def _decode(method: str, path: str, code: int, raw: bytes,
                headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        try:
            doc = _loads(raw) if raw else {}
        except ValueError:
            doc = None
        if 200 <= code < 300:
            if not isinstance(doc, dict):
                raise KubeUnavailable(f"{method} {path}: HTTP {code} with a non-JSON body")
            return doc
        headers = headers or {}
        error = status_error_from_dict(doc if isinstance(doc, dict) else _text_status(code, raw, headers), code)
        seconds = _retry_after(code, headers)
        if seconds is not None and "retryAfterSeconds" not in error.details:
            error.details["retryAfterSeconds"] = seconds  # as client-go's generic server error
        raise KubeAPIError(error, method=method, path=path)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await self.request_json("GET", path, params=params)

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.request_json("POST", path, body=body)

    async def put(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.request_json("PUT", path, body=body)

    async def patch(self, path: str, body: Any, *,
                    content_type: str = "application/merge-patch+json") -> dict[str, Any]:
        """PATCH with a JSON merge patch (default) or `application/json-patch+json` operations."""
        return await self.request_json("PATCH", path, body=body, content_type=content_type)

    async def watch(self, path: str, params: Mapping[str, str], *,
                    read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        """Stream watch events ({type, object}); ends when the server closes the stream. A start
        answered with Retry-After is retried as a request is, its waits within `read_timeout`."""
        url = self.config.server + path
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=read_timeout)
        loop = asyncio.get_running_loop()
        deadline, retries = loop.time() + read_timeout, 0
        while True:
            credential = await self._exec_credential()
            headers = self._headers(credential)
            wait = None
            try:
                async with self.session.get(url, params={**params, "watch": "true"}, headers=headers,
                                            timeout=timeout, **self._request_kwargs()) as resp:
                    if resp.status == 401 and credential is not None and self._exec is not None:
                        self._exec.invalidate(credential)  # the next watch or request runs the plugin
                    if resp.status != 200:
                        raw = await resp.read()
                        wait = _retry_wait(resp.status, resp.headers, retries, deadline - loop.time())
                        if wait is None:
                            self._decode("GET", path, resp.status, raw, resp.headers)
                    if wait is None:
                        async for event in _json_lines(resp.content):
                            yield event
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
                raise KubeUnavailable(f"WATCH {path}: {type(err).__name__}: {err}") from err
            retries += 1
            _log.debug("WATCH %s: HTTP %d with Retry-After %ds, retry %d of %d", path, resp.status, wait,
                       retries, _MAX_RETRIES)
            await asyncio.sleep(wait)


def _retry_after(code: int, headers: Mapping[str, str]) -> int | None:
    """client-go's checkWait: the seconds a 429 or 5xx answer asks for before the request is sent
    again (a negative number: none); None when it asks nothing (no header, or not whole seconds)."""
    if code != 429 and code < 500:
        return None
    value = headers.get("Retry-After", "")
    return max(0, int(value)) if _WHOLE_SECONDS.fullmatch(value) else None


def _retry_wait(code: int, headers: Mapping[str, str], retries: int, left: float) -> int | None:
    """Seconds to wait before retry number `retries + 1`, or None: the answer asks for no retry,
    the retries are used up, or the wait would leave no time of the `left` seconds."""
    wait = _retry_after(code, headers)
    if wait is None or retries >= _MAX_RETRIES or wait >= left:
        return None
    return wait


def _text_status(code: int, raw: bytes, headers: Mapping[str, str]) -> dict[str, Any] | None:
    """A Status carrying a plain-text answer as its message (client-go keeps up to 2 KiB of a
    text/* or untyped body); None for other bodies."""
    media = headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    text = raw[:_MAX_TEXT_BYTES].decode("utf-8", "replace").strip()
    if not text or (media and not media.startswith("text/")):
        return None
    return {"kind": "Status", "code": code, "message": text}


async def _json_lines(stream: aiohttp.StreamReader) -> AsyncIterator[dict[str, Any]]:
    buffer = bytearray()
    async for chunk in stream.iter_any():
        buffer.extend(chunk)
        if len(buffer) > _MAX_EVENT_BYTES:
            raise KubeUnavailable("watch event larger than 64 MiB")
        while (newline := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:newline]).strip()
            del buffer[:newline + 1]
            if line:
                yield _event(line)
    if buffer.strip():
        yield _event(bytes(buffer))


def _loads(raw: bytes) -> Any:
    """JSON -> Python with orjson (several times faster on watch events and answers); what it
    refuses but the json module reads (NaN, integers beyond 64 bits) still decodes as before."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _encode(body: Any) -> bytes:
    """Compact JSON; the json module for what orjson refuses (e.g. non-string keys)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, separators=(",", ":")).encode()


def _event(line: bytes) -> dict[str, Any]:
    try:
        event = _loads(line)
    except ValueError as err:
        raise KubeUnavailable(f"undecodable watch event: {err}") from err
    if not isinstance(event, dict):
        raise KubeUnavailable("watch event is not an object")
    return event
