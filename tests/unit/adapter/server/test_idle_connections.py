"""Connections that never finish a request are closed (kube-apiserver: IdleTimeout 90 s), while a
request that takes longer than that to answer is still answered."""

import asyncio
import inspect

import pytest
from aiohttp import web

from adapter.server import routes
from adapter.server.routes import make_runner
from tests.unit.adapter.server.conftest import serving


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(0.6)
    return web.Response(text="ok")


@pytest.fixture
async def port():
    app = web.Application()
    app.router.add_get("/", _slow)
    async with serving(make_runner(app, idle_timeout=0.3)) as bound:
        yield bound


@pytest.mark.parametrize("sent", [
    pytest.param(b"", id="connected and silent"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n", id="headers never finished"),
])
async def test_a_connection_without_a_complete_request_is_closed(port, sent):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(sent)
    assert await asyncio.wait_for(reader.read(), 1.5) == b""  # EOF from the server, no answer
    writer.close()


async def test_a_slow_answer_is_not_cut_by_the_idle_timeout(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 1.5)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
    writer.close()


def test_the_adapter_uses_kube_apiservers_idle_timeout():
    assert routes.IDLE_TIMEOUT == 90.0
    assert inspect.signature(make_runner).parameters["idle_timeout"].default == routes.IDLE_TIMEOUT
