"""What our client and the real kubectl each send for `GET /api` with one kubeconfig, for tests
that hold our kubeconfig reading to kubectl's: a plain-HTTP server records each request's path and
headers, and `ours_and_kubectls` returns the record of each client's request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    path: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


class ApiServer:
    """A plain-HTTP server answering `/api` (APIVersions) and keeping each request, newest last."""

    def __init__(self) -> None:
        self.port = 0  # known once started
        self.seen: list[Seen] = []

    async def answer(self, request: web.Request) -> web.Response:
        self.seen.append(Seen(path=request.path, headers=tuple(request.headers.items())))
        return web.json_response({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})


@asynccontextmanager
async def api_server() -> AsyncIterator[ApiServer]:
    recorder = ApiServer()
    app = web.Application()
    app.router.add_get("/{tail:.*}", recorder.answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    recorder.port = int(server.port or 0)
    try:
        yield recorder
    finally:
        await server.close()


async def ours_and_kubectls(path: Path, server: ApiServer) -> tuple[Seen, Seen]:
    """(what our client's request carried, what kubectl's carried); both must get an answer."""
    client = KubeClient(load_kube_config(path), timeout=1.5)
    await client.start()
    try:
        assert (await client.get("/api"))["kind"] == "APIVersions"
    finally:
        await client.close()
    ours = server.seen.pop()
    kubectl = await asyncio.create_subprocess_exec(
        "kubectl", f"--kubeconfig={path}", "get", "--raw", "/api",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(kubectl.communicate(), 20)
    assert kubectl.returncode == 0, err.decode()
    return ours, server.seen[-1]
