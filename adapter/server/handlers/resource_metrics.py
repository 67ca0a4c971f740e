"""HTTP handler for metrics.k8s.io/v1beta1 PodMetrics and NodeMetrics (get and list).

Paths: `nodes`, `nodes/{name}`, `pods` (all namespaces), `namespaces/{ns}/pods`,
`namespaces/{ns}/pods/{name}`; list options `labelSelector` and `fieldSelector`. Anything else under
the group-version is 404 like an unrouted path. A client that prefers a Table (`kubectl get
podmetrics`) gets metrics-server's columns; a watch is 405, as metrics-server offers none.

Non-goals: metric logic (services), error → Status translation (the server's middleware).
"""

from __future__ import annotations

from aiohttp import web

from adapter.server import params, render_metrics, render_tables
from adapter.server.context import REQUEST_INFO
from adapter.server.handlers import json_response
from adapter.services.resource_metrics import ResourceMetricsService, ResourceQuery
from adapter.services.results import NodeMetrics, NodeMetricsList, PodMetrics, PodMetricsList
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
    if request[REQUEST_INFO].verb == "watch":  # kube-apiserver's answer for a storage without Watch
        raise status.MethodNotAllowed.for_verb("watch", parts[-1], render_metrics.RESOURCE_GROUP)
    table = render_tables.table_request(request.headers.get("Accept"), request.query.get("includeObject"))
    result: render_tables.ResourceMetrics
    match parts:
        case ["nodes"]:
            result = await service.list_nodes(_options(request))
        case ["nodes", name] if name:
            result = await service.get_node(name)
        case ["pods"]:
            result = await service.list_pods(None, _options(request))
        case ["namespaces", namespace, "pods"] if namespace:
            result = await service.list_pods(namespace, _options(request))
        case ["namespaces", namespace, "pods", name] if namespace and name:
            result = await service.get_pod(namespace, name)
        case _:
            raise status.NotFound.for_path()
    return json_response(render_tables.render_table(result, table) if table else _document(result))


def _document(result: render_tables.ResourceMetrics) -> dict[str, object]:
    match result:
        case PodMetricsList():
            return render_metrics.render_pod_metrics_list(result)
        case PodMetrics():
            return render_metrics.render_pod_metrics(result)
        case NodeMetricsList():
            return render_metrics.render_node_metrics_list(result)
        case NodeMetrics():
            return render_metrics.render_node_metrics(result)


def register(app: web.Application, service: ResourceMetricsService) -> None:
    app[SERVICE] = service
    app.router.add_get(_PREFIX + "/{tail:.+}", get_metrics)
