"""HTTP handler for external.metrics.k8s.io/v1beta1 metric values.

The only shape is `namespaces/{ns}/{metric}?labelSelector=<series selector>`; anything else under the
group-version is 404 like an unrouted path. Discovery of the group-version is served elsewhere.

Non-goals: metric logic (services), error → Status translation (the server's middleware).
"""

from __future__ import annotations

from aiohttp import web

from adapter.server import params, render_metrics
from adapter.server.handlers import ParsedRequests, json_response
from adapter.services.external_metrics import ExternalMetricRequest, ExternalMetricsService
from kubecommon import status

__all__ = ["PARSED", "SERVICE", "parse_path", "register"]

#: what `parse_path` reads: (path tail, labelSelector)
_RequestKey = tuple[str, str | None]

SERVICE = web.AppKey("external_metrics_service", ExternalMetricsService)
PARSED = web.AppKey("external_metrics_parsed", ParsedRequests[_RequestKey, ExternalMetricRequest])
_PREFIX = f"/apis/{render_metrics.EXTERNAL_GROUP}/v1beta1"


def parse_path(tail: str, label_selector: str | None) -> ExternalMetricRequest:
    parts = tail.split("/")
    if len(parts) != 3 or parts[0] != "namespaces" or not parts[1] or not parts[2]:
        raise status.NotFound.for_path()
    return ExternalMetricRequest(namespace=parts[1], metric=parts[2],
                                 metric_selector=params.parse_selector_param(label_selector))


async def get_metric(request: web.Request) -> web.Response:
    parsed = request.app[PARSED].parse((request.match_info["tail"], request.query.get("labelSelector")))
    result = await request.app[SERVICE].get(parsed)
    return json_response(render_metrics.render_external(result))


def register(app: web.Application, service: ExternalMetricsService) -> None:
    app[SERVICE] = service
    app[PARSED] = ParsedRequests(parse_path)
    app.router.add_get(_PREFIX + "/{tail:.+}", get_metric)
