"""HTTP handler for metrics.k8s.io/v1beta1 PodMetrics and NodeMetrics (get and list).

Paths: `nodes`, `nodes/{name}`, `pods` (all namespaces), `namespaces/{ns}/pods`,
`namespaces/{ns}/pods/{name}`; list options `labelSelector` and `fieldSelector`. Anything else under
the group-version is 404 like an unrouted path.

Non-goals: metric logic (services), error → Status translation (the server's middleware).
"""

from __future__ import annotations

from aiohttp import web

from adapter.server import params, render_metrics
from adapter.server.handlers import json_response
from adapter.services.resource_metrics import ResourceMetricsService, ResourceQuery
from kubecommon import status

__all__ = ["SERVICE", "register"]

SERVICE = web.AppKey("resource_metrics_service", ResourceMetricsService)
_PREFIX = f"/apis/{render_metrics.RESOURCE_GROUP}/v1beta1"


def _options(request: web.Request) -> ResourceQuery:
    return ResourceQuery(
        label_selector=params.parse_selector_param(request.query.get("labelSelector")),
        field_selector=params.parse_field_selector_param(request.query.get("fieldSelector")))


async def get_metrics(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    parts = request.match_info["tail"].split("/")
    match parts:
        case ["nodes"]:
            body = render_metrics.render_node_metrics_list(await service.list_nodes(_options(request)))
        case ["nodes", name] if name:
            body = render_metrics.render_node_metrics(await service.get_node(name))
        case ["pods"]:
            body = render_metrics.render_pod_metrics_list(await service.list_pods(None, _options(request)))
        case ["namespaces", namespace, "pods"] if namespace:
            body = render_metrics.render_pod_metrics_list(
                await service.list_pods(namespace, _options(request)))
        case ["namespaces", namespace, "pods", name] if namespace and name:
            body = render_metrics.render_pod_metrics(await service.get_pod(namespace, name))
        case _:
            raise status.NotFound.for_path()
    return json_response(body)


def register(app: web.Application, service: ResourceMetricsService) -> None:
    app[SERVICE] = service
    app.router.add_get(_PREFIX + "/{tail:.+}", get_metrics)
