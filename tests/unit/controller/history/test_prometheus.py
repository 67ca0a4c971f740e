"""The history reader's requests to Prometheus: credentials and configured headers stay with the
configured origin when Prometheus (or a proxy in front of it) redirects elsewhere, as the adapter's
client does (kubecommon.redirects)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from controller.history.prometheus import PrometheusHistory

SERIES = {"status": "success", "data": [{"__name__": "queue_depth", "queue": "orders"}]}


async def _serve(handler: web.RequestHandler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[str, list[dict[str, str]], list[dict[str, str]]]]:
    """A Prometheus that redirects every request (307, the method kept) to another origin, and
    that origin; each records the headers it was sent (lower-case names)."""
    at_origin: list[dict[str, str]] = []
    elsewhere: list[dict[str, str]] = []

    async def other(request: web.Request) -> web.Response:
        elsewhere.append({k.lower(): v for k, v in request.headers.items()})
        assert (await request.post()).get("match[]") == "queue_depth"  # the form went along
        return web.json_response(SERIES)

    other_runner, other_url = await _serve(other)

    async def origin(request: web.Request) -> web.Response:
        at_origin.append({k.lower(): v for k, v in request.headers.items()})
        raise web.HTTPTemporaryRedirect(f"{other_url}{request.path}")

    origin_runner, origin_url = await _serve(origin)
    yield origin_url, at_origin, elsewhere
    await origin_runner.cleanup()
    await other_runner.cleanup()


@pytest.mark.timeout(5)
async def test_a_redirect_to_another_origin_carries_no_credentials_or_configured_headers(servers) -> None:  # type: ignore[no-untyped-def]
    url, at_origin, elsewhere = servers
    reader = PrometheusHistory(url, headers={"X-Scope-OrgID": "tenant-1", "X-Api-Key": "k"},
                               authorization=lambda: "Bearer secret")
    async with reader:
        shapes = await reader.series_shapes(["queue_depth"], 0.0, 60.0)
    assert shapes == {"queue_depth": (("queue_depth", frozenset({"queue"})),)}
    assert at_origin and {"authorization", "x-scope-orgid", "x-api-key"} <= set(at_origin[0])
    assert at_origin[0]["authorization"] == "Bearer secret"
    assert elsewhere and not {"authorization", "x-scope-orgid", "x-api-key"} & set(elsewhere[0]), elsewhere[0]
