"""An in-process aiohttp server that speaks Prometheus' HTTP API, for client unit tests.

It records every request (method, path, form/query parameters, headers, client certificate CN)
and answers from a handler the test sets; the default answers a vector for any query.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from multidict import MultiDict

Handler = Callable[["Recorded"], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorded:
    method: str
    path: str
    params: MultiDict[str]
    headers: dict[str, str]
    peer_cn: str | None
    #: the client's source port: requests on one kept-alive connection share it
    peer_port: int = 0


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def vector(*samples: tuple[dict[str, str], str], ts: float = 1700000000.5) -> dict[str, Any]:
    return {"status": "success",
            "data": {"resultType": "vector",
                     "result": [{"metric": m, "value": [ts, v]} for m, v in samples]}}


async def default_handler(req: Recorded) -> web.StreamResponse:
    if req.path.endswith("/api/v1/series"):
        return json_response({"status": "success", "data": [{"__name__": "up", "job": "x"}]})
    return json_response(vector(({"pod": "a"}, "1")))


@dataclass(frozen=False, slots=True, kw_only=True)
class FakePromHTTP:
    """Mutable recorder + handler slot; `url` once started."""

    handler: Handler = default_handler
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self, *, ssl_context: ssl.SSLContext | None = None) -> FakePromHTTP:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._serve)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        params: MultiDict[str] = MultiDict(request.query)
        if request.method == "POST":
            params.extend(await request.post())  # type: ignore[arg-type]
        peer_cn = None
        ssl_obj = request.transport.get_extra_info("ssl_object") if request.transport else None
        if ssl_obj is not None and ssl_obj.getpeercert():
            subject = dict(x[0] for x in ssl_obj.getpeercert()["subject"])
            peer_cn = subject.get("commonName")
        rec = Recorded(method=request.method, path=request.path, params=params,
                       headers=dict(request.headers), peer_cn=peer_cn,
                       peer_port=request.transport.get_extra_info("peername")[1] if request.transport else 0)
        self.requests.append(rec)
        return await self.handler(rec)


async def slow(seconds: float, response: web.StreamResponse) -> web.StreamResponse:
    await asyncio.sleep(seconds)
    return response
