"""Requests the HTTP parser refuses, before any middleware or authentication, get a
`metav1.Status` JSON body (never aiohttp's text page) and a log line without a traceback."""

import asyncio

import pytest
from aiohttp import web

from adapter.server.routes import make_runner
from tests.unit.adapter.server.conftest import serving


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


@pytest.fixture
async def port():
    app = web.Application()
    app.router.add_get("/", _ok)
    async with serving(make_runner(app)) as bound:
        yield bound


@pytest.mark.parametrize("sent", [
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", id="a header name with a space"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20_000 + b"\r\n\r\n", id="a header line too long"),
    pytest.param(b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", id="a NUL in the target"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", id="bad chunk size"),
])
async def test_a_request_the_parser_refuses_gets_a_status_body_without_traceback(port, sent, caplog):
    import json

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(sent)
    answer = await asyncio.wait_for(reader.read(), 1.5)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"400", head
    assert b"application/json" in head
    status = json.loads(body)
    assert {k: status[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "BadRequest", "code": 400}
    assert status["message"] == "the request could not be parsed (bad request)"
    assert "Traceback" not in caplog.text and "Traceback" not in body.decode()
