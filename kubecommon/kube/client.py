"""Async Kubernetes REST client on aiohttp: JSON GET/POST and streamed watches.

Job: one pooled session per API server identity; bearer tokens (static or a rotating token
file re-read every minute), client certificates, CA verification, the cluster's proxy-url,
the user's impersonation headers, kubeconfig `exec` plugins (token or client certificate, re-run
without blocking the event loop when expired or answered 401); non-2xx answers become
`KubeAPIError` carrying the server's typed `StatusError`; transport failures and timeouts
become `KubeUnavailable`. Watch streams are split into JSON events without aiohttp's line-size
limit (one event can be a large object).

Non-goals: retries (callers decide), caching (cache.py), create/delete helpers (POST, PUT and
PATCH exist for reviews, /scale, status and events).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
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
                                  f"within {wait:g} s") from None
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
        """One request; returns the decoded JSON object or raises KubeAPIError/KubeUnavailable."""
        url = self.config.server + path
        client_timeout = aiohttp.ClientTimeout(total=timeout or self._timeout)
        data = None if body is None else _encode(body)
        for attempt in (1, 2):
            credential = await self._exec_credential(timeout)
            headers = self._headers(credential)
            if data is not None:
                headers["Content-Type"] = content_type
            try:
                async with self.session.request(method, url, params=params, data=data,
                                                headers=headers, timeout=client_timeout,
                                                **self._request_kwargs()) as resp:
                    raw, code = await resp.read(), resp.status
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
                raise KubeUnavailable(f"{method} {path}: {type(err).__name__}: {err}") from err
            if code == 401 and credential is not None and self._exec is not None and attempt == 1:
                self._exec.invalidate(credential)  # client-go: a 401 re-runs the plugin once
                continue
            return self._decode(method, path, code, raw)
        raise AssertionError("unreachable")

    @staticmethod
    def _decode(method: str, path: str, code: int, raw: bytes) -> dict[str, Any]:
        try:
            doc = _loads(raw) if raw else {}
        except ValueError:
            doc = None
        if 200 <= code < 300:
            if not isinstance(doc, dict):
                raise KubeUnavailable(f"{method} {path}: HTTP {code} with a non-JSON body")
            return doc
        raise KubeAPIError(status_error_from_dict(doc if isinstance(doc, dict) else None, code),
                           method=method, path=path)

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
        """Stream watch events ({type, object}); ends when the server closes the stream."""
        url = self.config.server + path
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=read_timeout)
        credential = await self._exec_credential()
        headers = self._headers(credential)
        try:
            async with self.session.get(url, params={**params, "watch": "true"}, headers=headers,
                                        timeout=timeout, **self._request_kwargs()) as resp:
                if resp.status == 401 and credential is not None and self._exec is not None:
                    self._exec.invalidate(credential)  # the next watch or request runs the plugin
                if resp.status != 200:
                    self._decode("GET", path, resp.status, await resp.read())
                async for event in _json_lines(resp.content):
                    yield event
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
            raise KubeUnavailable(f"WATCH {path}: {type(err).__name__}: {err}") from err


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
