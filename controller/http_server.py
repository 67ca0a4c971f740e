"""The controller's HTTP port (aiohttp): probes, its own metrics and the decision documents.

`/metrics` (controller.telemetry's registry, with the queue and stuck-worker gauges read at
scrape); `/healthz` and `/livez` answer while the process runs (and, when leading, while the Lease
is renewed in time); `/readyz` once the watch caches synced, on the leader and on standbys alike;
`/debug/decisions/{kind}/{namespace}/{name}` the last decision and its trace as JSON (read-only;
see controller.preview). Authentication and authorization are controller.http_auth's middleware.

Non-goals: the metrics themselves (controller.telemetry), what is healthy or ready (the caller's
checks), the documents (controller.preview), TLS (controller.app).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from controller.telemetry import ControllerTelemetry

__all__ = ["DecisionLookup", "build_http_app"]

DecisionLookup = Callable[[str, str, str], Mapping[str, Any] | None]


def build_http_app(telemetry: ControllerTelemetry, *, ready: Callable[[], str | None],
                   healthy: Callable[[], str | None], decision: DecisionLookup,
                   queue_depth: Callable[[], int], running_seconds: Callable[[], Sequence[float]] = tuple,
                   middlewares: Sequence[Middleware] = ()) -> web.Application:
    """`ready`/`healthy` return None when fine, else why not (shown in the 503 body); `running_seconds`
    how long each sync in progress has run; `middlewares` run before every handler
    (controller.http_auth's guard, when the port is secure)."""

    async def metrics(_: web.Request) -> web.Response:
        depth = queue_depth()
        telemetry.queue_depth.set(depth)
        telemetry.wq_depth.set(depth)
        running = running_seconds()
        telemetry.wq_unfinished.set(sum(running))
        telemetry.wq_longest.set(max(running, default=0.0))
        return web.Response(body=telemetry.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    def probe(check: Callable[[], str | None]) -> Callable[[web.Request], Any]:
        async def handler(_: web.Request) -> web.Response:
            problem = check()
            if problem is None:
                return web.Response(text="ok")
            return web.Response(status=503, text=problem)

        return handler

    async def debug_decision(request: web.Request) -> web.Response:
        info = request.match_info
        found = decision(info["kind"], info["namespace"], info["name"])
        if found is None:
            return web.json_response({"error": f"no decision recorded for {info['kind']} "
                                               f"{info['namespace']}/{info['name']}"}, status=404)  # fmt: skip
        return web.json_response(found, dumps=lambda v: json.dumps(v, indent=1, sort_keys=True))

    app = web.Application(middlewares=middlewares)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", probe(healthy))
    app.router.add_get("/livez", probe(healthy))
    app.router.add_get("/readyz", probe(ready))
    app.router.add_get("/debug/decisions/{kind}/{namespace}/{name}", debug_decision)
    return app
