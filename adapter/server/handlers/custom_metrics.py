"""HTTP handler for custom.metrics.k8s.io v1beta1 and v1beta2 metric values.

Parses the path (custom-metrics-apiserver's three shapes: namespaced object or `*`, cluster-scoped
object or `*`, `namespaces/{ns}/metrics/{metric}`) and the `labelSelector` / `metricLabelSelector`
parameters, calls `CustomMetricsService` and renders the version's wire format. Discovery of the
group-version itself (`/apis/custom.metrics.k8s.io/{v}`) is served elsewhere.

Non-goals: metric logic (services), error → Status translation (the server's middleware).
"""

from __future__ import annotations

from aiohttp import web

from adapter.server import params, render_metrics
from adapter.server.handlers import ParsedRequests, json_body
from adapter.services import errors
from adapter.services.custom_metrics import CustomMetricRequest, CustomMetricsService
from adapter.services.kinds import normalize_resource
from kubecommon.fieldselectors import FieldSelector

__all__ = ["ENCODER", "PARSED", "SERVICE", "VERSIONS", "parse_path", "register"]

VERSIONS = ("v1beta1", "v1beta2")
#: what `parse_path` reads: (path tail, labelSelector, metricLabelSelector, fieldSelector)
_RequestKey = tuple[str, str | None, str | None, str | None]

SERVICE = web.AppKey("custom_metrics_service", CustomMetricsService)
ENCODER = web.AppKey("custom_metrics_encoder", render_metrics.CustomMetricsEncoder)
PARSED = web.AppKey("custom_metrics_parsed", ParsedRequests[_RequestKey, CustomMetricRequest])
_PREFIX = f"/apis/{render_metrics.CUSTOM_GROUP}"


def parse_path(tail: str, label_selector: str | None, metric_selector: str | None,
               field_selector: str | None = None) -> CustomMetricRequest:
    """The request a decoded path tail (after `/apis/<group>/<version>/`) and query describe."""
    parts = tail.split("/")
    if any(not part for part in parts):
        raise errors.InvalidRequestPath()
    metric_sel = params.parse_selector_param(metric_selector)
    if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "metrics":
        return CustomMetricRequest.for_namespace(parts[1], parts[3], metric_sel)
    if len(parts) == 5 and parts[0] == "namespaces":
        namespace, (resource, name, metric) = parts[1], parts[2:]
    elif len(parts) == 3 and parts[0] != "namespaces":
        namespace, (resource, name, metric) = None, parts
    else:
        raise errors.InvalidRequestPath()
    pinned = (params.parse_field_selector_param(field_selector) or FieldSelector()).value_for("metadata.name")
    if pinned is not None and name != "*" and pinned != name:
        # what the generic GET handler of k8s.io/apiserver says (custom-metrics-apiserver inherits it)
        raise errors.BadSelector("fieldSelector metadata.name doesn't match requested name")
    return CustomMetricRequest(
        resource=normalize_resource(resource), metric=metric, namespace=namespace,
        name=None if name == "*" else name,
        label_selector=params.parse_selector_param(label_selector), metric_selector=metric_sel)


async def get_metric(request: web.Request) -> web.Response:
    version = request.match_info["version"]
    query = request.query
    parsed = request.app[PARSED].parse((request.match_info["tail"], query.get("labelSelector"),
                                        query.get("metricLabelSelector"), query.get("fieldSelector")))
    result = await request.app[SERVICE].get(parsed)
    return json_body(request.app[ENCODER].encode(result, version))


def register(app: web.Application, service: CustomMetricsService) -> None:
    app[SERVICE] = service
    app[ENCODER] = render_metrics.CustomMetricsEncoder()
    app[PARSED] = ParsedRequests(parse_path)
    app.router.add_get(_PREFIX + "/{version:v1beta[12]}/{tail:.+}", get_metric)
