"""`/metrics`: the adapter's own metrics in the Prometheus text format (per-app registry).

Non-goals: OpenMetrics negotiation (Prometheus scrapes the text format fine).
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from adapter.server.context import CONTEXT

__all__ = ["register"]


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[CONTEXT].telemetry.registry)
    response = web.Response(body=body)
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


def register(app: web.Application) -> None:
    app.router.add_get("/metrics", _metrics)
