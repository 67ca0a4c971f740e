"""A recording, fault-injecting HTTP proxy in front of the API-server stand-in, for tests and benches.

The controller under test is given a kubeconfig pointing at `https://127.0.0.1:<port>` (the proxy's
own certificate, issued by `ca_pem_served`, so the controller sends its credentials as it would to
kube-apiserver: a kubeconfig's credentials never go to a plain-http server); every request is
forwarded to the stand-in over HTTPS (its CA verified, the caller's headers passed
through, so authentication and RBAC are the stand-in's) and recorded: time, method, path, query,
status. Watches are streamed chunk by chunk. Tests read the record ("how many PUTs to /scale did
this replica send") and arm faults: `inject_status(method, pattern, code, count)` answers the next
`count` matching requests itself with a genuine `metav1.Status` (409 Conflict, 500, ...), the way a
racing writer or a failing server would.

Runs its own event loop in a daemon thread, so synchronous tests can use it. One proxy per
controller replica gives per-replica request counts.

Non-goals: client certificates, HTTP/2, request rewriting, anything beyond loopback.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from kubecommon import tls

__all__ = ["ApiProxy", "Recorded"]

_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "accept-encoding"}
_REASONS = {409: "Conflict", 500: "InternalError", 503: "ServiceUnavailable", 404: "NotFound", 403: "Forbidden"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorded:
    at: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: str
    status: int
    injected: bool


@dataclass(slots=True, kw_only=True)
class _Fault:
    method: str
    pattern: re.Pattern[str]
    code: int
    remaining: int


class ApiProxy:
    def __init__(self, upstream: str, *, ca_pem: bytes, port: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self._ca_pem = ca_pem
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="api-proxy")
        self._lock = threading.Lock()
        self._records: list[Recorded] = []
        self._faults: list[_Fault] = []
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self.url = ""
        # P-256: a proxy per controller replica under test, and an RSA key costs tens of ms to make
        ca = tls.generate_ca("api-proxy-ca", key_algorithm="ecdsa")
        self._serving = tls.issue_certificate(ca, "api-proxy", ip_addresses=["127.0.0.1"], key_algorithm="ecdsa")
        #: the CA a client trusts to verify the proxy (the kubeconfig's certificate-authority-data)
        self.ca_pem_served = ca.cert_pem

    # --- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ApiProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()

    async def _start(self) -> None:
        context = ssl.create_default_context(cadata=self._ca_pem.decode())
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=0),
                                              auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        # handler_cancellation: a client that goes away (a killed controller) ends its forwarded watch
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await self._runner.setup()
        with tempfile.TemporaryDirectory(prefix="api-proxy-") as files:  # read once, here
            cert_file, key_file = Path(files) / "tls.crt", Path(files) / "tls.key"
            self._serving.write(cert_file, key_file)
            serving = tls.server_ssl_context(cert_file, key_file)
        site = web.TCPSite(self._runner, "127.0.0.1", self._port, ssl_context=serving)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"https://127.0.0.1:{port}"

    async def _stop(self) -> None:
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        await asyncio.sleep(0.1)  # let the TLS transports finish closing before the loop goes

    # --- what tests use ---------------------------------------------------------------------------
    def inject_status(self, method: str, pattern: str, code: int = 409, count: int = 1) -> None:
        """Answer the next `count` requests `method` whose path matches `pattern` with `code`."""
        with self._lock:
            self._faults.append(_Fault(method=method.upper(), pattern=re.compile(pattern), code=code,
                                       remaining=count))

    def records(self, method: str | None = None, pattern: str | None = None, *, since: float = 0.0,
                injected: bool | None = None) -> list[Recorded]:
        regex = re.compile(pattern) if pattern else None
        with self._lock:
            return [r for r in self._records
                    if r.at >= since and (method is None or r.method == method.upper())
                    and (regex is None or regex.search(r.path))
                    and (injected is None or r.injected == injected)]

    def count(self, method: str | None = None, pattern: str | None = None, *, since: float = 0.0) -> int:
        return len(self.records(method, pattern, since=since))

    def reset(self) -> None:
        with self._lock:
            self._records.clear()

    # --- forwarding -------------------------------------------------------------------------------
    def _take_fault(self, method: str, path: str) -> int | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0 and fault.method == method and fault.pattern.search(path):
                    fault.remaining -= 1
                    return fault.code
        return None

    def _record(self, request: web.Request, status: int, injected: bool, at: float) -> None:
        with self._lock:
            self._records.append(Recorded(at=at, method=request.method, path=request.path,
                                          query=request.query_string, status=status, injected=injected))

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            return await self._forward_one(request)
        finally:
            self._handlers.discard(task)

    async def _forward_one(self, request: web.Request) -> web.StreamResponse:
        at = time.monotonic()
        code = self._take_fault(request.method, request.path)
        if code is not None:
            await request.read()
            self._record(request, code, True, at)
            return web.json_response(_status_body(code, request.path), status=code)
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        body = await request.read()
        url = f"{self.upstream}{request.path_qs}"
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self._session.request(request.method, url, headers=headers, data=body or None,
                                         timeout=timeout) as upstream:
            self._record(request, upstream.status, False, at)
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-encoding":
                    response.headers[key] = value
            if upstream.headers.get("Content-Encoding"):
                response.headers["Content-Encoding"] = upstream.headers["Content-Encoding"]
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError):
                pass
            return response


def _status_body(code: int, path: str) -> dict[str, Any]:
    reason = _REASONS.get(code, "InternalError")
    message = ("Operation cannot be fulfilled: the object has been modified; please apply your changes "
               "to the latest version and try again") if code == 409 else f"injected {code} for {path}"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
