"""THE route table: builds the aiohttp application from a `ServerContext` and the metric services.

Infrastructure routes (health, discovery, OpenAPI, /metrics) and the three metrics API handler
modules are registered here and nowhere else, behind the middleware chain.

Non-goals: constructing services or the context (adapter.app does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from adapter.server.context import (CONTEXT, INFLIGHT, KEPT_REQUEST_INFOS, REQUEST_INFOS, Inflight,
                                    RequestInfos, ServerContext)
from adapter.server.handlers import discovery, health, metrics, openapi
from adapter.server.middleware import MIDDLEWARES
from adapter.server.parse_errors import StatusAppRunner

if TYPE_CHECKING:
    from adapter.services.custom_metrics import CustomMetricsService
    from adapter.services.external_metrics import ExternalMetricsService
    from adapter.services.resource_metrics import ResourceMetricsService

__all__ = ["IDLE_TIMEOUT", "Services", "build_app", "make_runner"]

#: kube-apiserver's http.Server IdleTimeout. aiohttp's default (3630 s) let a client that
#: connected and sent nothing, or only part of its headers, hold a connection for an hour.
IDLE_TIMEOUT = 90.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """The metrics services (None: that API group is not served)."""

    custom: CustomMetricsService | None = None
    external: ExternalMetricsService | None = None
    resource: ResourceMetricsService | None = None


def build_app(ctx: ServerContext, services: Services) -> web.Application:
    # Long URLs (big label selectors) must reach the middleware, which answers with a Status
    # instead of aiohttp's plain-text 400 at 8 KiB.
    app = web.Application(middlewares=MIDDLEWARES,
                          handler_args={"max_line_size": 1024 * 1024,
                                        "max_field_size": 64 * 1024})
    app[CONTEXT] = ctx
    app[INFLIGHT] = Inflight()
    app[REQUEST_INFOS] = RequestInfos(KEPT_REQUEST_INFOS)
    health.register(app)
    metrics.register(app)
    discovery.register(app)
    openapi.register(app)
    # Imported here so that infrastructure tests do not need the metrics stack.
    from adapter.server.handlers import custom_metrics, external_metrics, resource_metrics

    if services.custom is not None:
        custom_metrics.register(app, services.custom)
    if services.external is not None:
        external_metrics.register(app, services.external)
    if services.resource is not None:
        resource_metrics.register(app, services.resource)
    return app


def make_runner(app: web.Application, *, idle_timeout: float = IDLE_TIMEOUT) -> web.AppRunner:
    """The runner the adapter serves `app` with: an idle connection, or one whose request headers
    have not fully arrived, is closed after `idle_timeout` (a request being answered is not)."""
    return StatusAppRunner(app, access_log=None, shutdown_timeout=5.0, keepalive_timeout=idle_timeout)
