"""Conformance checkers that drive the metrics services, the Prometheus flags/client and
discovery (written by other parts of the adapter) with their map-backed fakes.

Each takes (case, fixtures) and returns a `Result`; see conformance_adapter for the contract.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from adapter.discovery.registry import build_registry
from adapter.kube.fake import FakeObjectCaches
from adapter.kube.objects import KubeObject
from adapter.prometheus.api import Sample
from adapter.prometheus.fake import FakePrometheus
from adapter.rules.compile import CompiledConfig
from hack.conformance_adapter_cases import Result, _compile, _result, _series_from_rule
from kubecommon import status
from kubecommon.quantity import Format, Quantity

_DEFAULT_RULE = {  # the walkthrough rule, for error cases that name a metric but give no rule
    "seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
    "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
    "name": {"matches": "^(.*)_total$"},
    "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
}


def _value(raw: Any) -> float:
    return float(raw) if not isinstance(raw, str) else float(raw.replace("Inf", "inf"))


def check_quantity(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services import resource_metrics

    data = case["input"]
    value, api = _value(data["prometheus_value"]), data["api_path"]
    if api == "resource.cpu":
        got = str(resource_metrics._cpu(value))
    elif api == "resource.memory":
        got = str(resource_metrics._memory(value))
    else:
        fmt = Format.BINARY_SI if data.get("format") == "BinarySI" else Format.DECIMAL_SI
        got = str(Quantity.from_float(value, fmt))
    return _result(case["expected"]["quantity"], got)


def _parse_http(text: str) -> tuple[str, dict[str, str]]:
    target = text.partition(" ")[2]
    parts = urlsplit(target)
    return unquote(parts.path), {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}


def _sample(item: Mapping[str, Any]) -> Sample:
    labels = item.get("labels", item.get("metric", {}))
    ts = item.get("timestamp_ms", 0) / 1000.0
    return Sample(labels=dict(labels), value=_value(item["value"]), timestamp=ts)


def _status(err: status.StatusError) -> dict[str, Any]:
    body = err.to_dict()
    return {k: body[k] for k in ("code", "reason", "message", "details") if k in body}


def _want_status(expected: Mapping[str, Any]) -> dict[str, Any]:
    want = {"code": expected["status"], "reason": expected.get("reason"), "message": expected.get("message")}
    if "details" in expected:
        want["details"] = expected["details"]
    return want


def _custom_setup(case: Mapping[str, Any]) -> tuple[CompiledConfig, Any]:
    compiled = _compile({"rules": [case.get("rule", _DEFAULT_RULE)]})
    registry = build_registry(compiled, {compiled.custom[0].series_query: [_series_from_rule(compiled.custom[0])]})
    return compiled, registry


def _custom_call(case: Mapping[str, Any], prom: FakePrometheus, objects: FakeObjectCaches) -> Any:
    from adapter.server.handlers.custom_metrics import parse_path
    from adapter.services.custom_metrics import CustomMetricsService

    _, registry = _custom_setup(case)
    path, params = _parse_http(case["input"]["http"])
    request = parse_path(path.split("/", 4)[4], params.get("labelSelector"), params.get("metricLabelSelector"))
    service = CustomMetricsService(registry=lambda: registry, prometheus=prom, objects=objects)
    return asyncio.run(service.get(request)), path.split("/")[3]


def _pods(namespace: str, names: list[str]) -> FakeObjectCaches:
    pods = [KubeObject(name=n, namespace=namespace, phase="Running", kind="Pod", api_version="v1") for n in names]
    return FakeObjectCaches({("", "pods"): pods})


def check_custom_errors(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus import errors as prom_errors

    data, expected = case["input"], case["expected"]
    prom = FakePrometheus()
    path, _ = _parse_http(data["http"])
    namespace = path.split("/")[5] if "/namespaces/" in path else ""
    if "prometheus_http_status" in data:
        prom.queries = _AlwaysRaise(prom_errors.PrometheusBadResponse(
            f"unknown response code {data['prometheus_http_status']}", path="/api/v1/query"))
    objects = _pods(namespace, data.get("kube_list_result_names", ["web-1"]))
    try:
        got = _custom_call(case, prom, objects)
    except status.StatusError as err:
        return _result(_want_status(expected), _status(err))
    return Result(False, _want_status(expected), f"200 with {got}")


class _AlwaysRaise(dict):  # type: ignore[type-arg]
    """A FakePrometheus answer table whose every entry is the same error."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def get(self, key: Any, default: Any = None) -> Any:
        return self.error


def check_custom_response(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server import render_metrics

    data, expected = case["input"], case["expected"]
    prom = FakePrometheus(queries=_AlwaysAnswer([_sample(i) for i in data["prometheus_vector"]]))
    path, _ = _parse_http(data["http"])
    names = [i["metric"]["kubernetes_pod_name"] for i in data["prometheus_vector"]]
    result, version = _custom_call(case, prom, _pods(path.split("/")[5], names))
    body = render_metrics.render_custom(result, version)
    for item in (*body["items"], *expected["body"]["items"]):
        item["timestamp"] = "<ts>"
    return _result(expected["body"], body)


class _AlwaysAnswer(dict):  # type: ignore[type-arg]
    def __init__(self, samples: list[Sample]) -> None:
        super().__init__()
        self.samples = samples

    def get(self, key: Any, default: Any = None) -> Any:
        return self.samples


def check_external(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server import render_metrics
    from adapter.server.handlers.external_metrics import parse_path
    from adapter.services.external_metrics import ExternalMetricsService

    data, expected = case["input"], case["expected"]
    rule = case.get("rule", {"seriesQuery": "queue_depth", "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>})",
                             "resources": {"namespaced": False}})
    compiled = _compile({"externalRules": [rule]})
    registry = build_registry(compiled, {compiled.external[0].series_query: [_series_from_rule(compiled.external[0])]})
    result = data.get("prometheus_result", {"result": []})
    prom = FakePrometheus(queries=_AlwaysAnswer(_decoded(result)))
    path, params = _parse_http(data.get("http", "GET /apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth"))
    try:
        request = parse_path(path.split("/", 4)[4], params.get("labelSelector"))
        got = asyncio.run(ExternalMetricsService(registry=lambda: registry, prometheus=prom).get(request))
    except status.StatusError as err:
        return _result(_want_status(expected), _status(err))
    body = render_metrics.render_external(got)
    return _result({"status": expected["status"], "items": expected.get("items")}, {"status": 200, "items": body["items"]})


def _decoded(result: Mapping[str, Any]) -> Any:
    """What the Prometheus client hands the service for a /api/v1/query `data` object: vector
    samples, a scalar as one label-less sample, any other type a bad-response error."""
    from adapter.prometheus import errors as prom_errors

    kind = result.get("resultType", "vector")
    if kind == "vector":
        return [_sample({"metric": i.get("metric", i.get("labels", {})), "value": _vector_value(i)})
                for i in result.get("result", [])]
    if kind == "scalar":
        ts, value = result["result"]
        return [Sample(labels={}, value=_value(value), timestamp=float(ts))]
    return prom_errors.PrometheusBadResponse(f"unexpected result type {kind}", path="/api/v1/query")


def _vector_value(item: Mapping[str, Any]) -> Any:
    value = item.get("value")
    return value[1] if isinstance(value, list) else value


def check_routing(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server.handlers.custom_metrics import parse_path

    path, params = _parse_http(case["input"]["http"])
    try:
        request = parse_path(path.split("/", 4)[4], params.get("labelSelector"), params.get("metricLabelSelector"))
    except status.StatusError as err:
        return _result(_want_status(case["expected"]), _status(err))
    got: dict[str, Any] = {"op": "by_selector" if request.name is None else "by_name",
                           "group_resource": str(request.resource), "namespace": request.namespace or "",
                           "namespaced": request.namespace is not None}
    if request.name is None:
        got["object_selector"] = str(request.label_selector)
    else:
        got["name"] = request.name
    got["metric"] = request.metric
    return _result(case["expected"], got)


def _resource_service(case: Mapping[str, Any], fixtures: Mapping[str, Any], prom: FakePrometheus,
                      objects: FakeObjectCaches) -> Any:
    from adapter.services.resource_metrics import ResourceMetricsService

    fixture = case["setup"]["config_fixture"].split(" ")[0]
    compiled = _compile({"resourceRules": fixtures[fixture]["resourceRules"]})
    assert compiled.resource is not None
    return ResourceMetricsService(rules=compiled.resource, prometheus=prom, objects=objects, clock=lambda: 0.0)


def check_resource_pods(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services.resource_metrics import ResourceQuery

    data, expected = case["input"], case["expected"]
    prom = FakePrometheus(queries={q: [_sample(s) for s in v] for q, v in data["prometheus_responses"].items()})
    pods = [KubeObject(name=p["name"], namespace=p["namespace"], phase="Running") for p in data["pods"]]
    caches = FakeObjectCaches({("", "pods"): pods})
    service = _resource_service(case, fixtures, prom, caches)
    result = asyncio.run(service.list_pods(None, ResourceQuery()))
    got = sorted((_pod_view(p) for p in result.items), key=lambda p: (p["namespace"], p["name"]))
    want = sorted(({**p, "containers_unordered": sorted(p["containers_unordered"], key=lambda c: c["name"])}
                   for p in expected["pod_metrics_in_input_order"]), key=lambda p: (p["namespace"], p["name"]))
    if "queries_issued_unordered" in expected:
        issued = sorted({q for q, _ in prom.query_calls})
        if issued != sorted(expected["queries_issued_unordered"]):
            return Result(False, sorted(expected["queries_issued_unordered"]), issued)
    return _result(want, got)


def _window(seconds: float) -> str:
    from adapter.server.render_metrics import format_duration

    return format_duration(seconds)


def _pod_view(pod: Any) -> dict[str, Any]:
    return {"namespace": pod.namespace, "name": pod.name, "timestamp_ms": round(pod.timestamp * 1000),
            "window": _window(pod.window_seconds),
            "containers_unordered": sorted(({"name": c.name, "usage": {k: str(v) for k, v in c.usage.items()}}
                                            for c in pod.containers), key=lambda c: c["name"])}


def check_resource_nodes(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.services.resource_metrics import ResourceQuery

    data, expected = case["input"], case["expected"]
    prom = FakePrometheus(queries={q: [_sample(s) for s in v] for q, v in data["prometheus_responses"].items()})
    caches = FakeObjectCaches({("", "nodes"): [KubeObject(name=n) for n in data["nodes"]]})
    service = _resource_service(case, fixtures, prom, caches)
    result = asyncio.run(service.list_nodes(ResourceQuery()))
    got = [{"name": n.name, "timestamp_ms": round(n.timestamp * 1000), "window": _window(n.window_seconds),
            "usage": {k: str(v) for k, v in n.usage.items()}} for n in result.items]
    issued = sorted({q for q, _ in prom.query_calls})
    if issued != sorted(expected["queries_issued_unordered"]):
        return Result(False, sorted(expected["queries_issued_unordered"]), issued)
    return _result(sorted(expected["node_metrics_in_input_order"], key=lambda n: n["name"]),
                   sorted(got, key=lambda n: n["name"]))


# --- flags, Prometheus client, discovery ---------------------------------------------------


def _args(flags: Mapping[str, Any]) -> argparse.Namespace:
    from adapter.prometheus.settings import add_flags

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_flags(parser)
    argv: list[str] = []
    for flag, value in flags.items():
        if not flag.startswith("--"):
            continue
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            for item in value:
                argv += [flag, item]
        elif value != "" and not str(value).startswith("("):
            argv += [flag, str(value)]
    return parser.parse_args(argv)


def check_headers(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import settings_from_args

    settings = settings_from_args(_args(case["input"]))
    got: dict[str, list[str]] = {}
    for key, value in settings.headers:
        got.setdefault(key, []).append(value)
    return _result(case["expected"]["http_headers"], got)


def check_auth(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import SettingsError, settings_from_args

    try:
        settings_from_args(_args(case["input"]))
    except SettingsError as err:
        return _result(case["expected"], {"success": False, "error": str(err)})
    return _result(case["expected"], {"success": True})


def check_tls(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """Upstream's testdata files are stand-ins: a valid CA/cert/key is generated here, and a
    file named `*error*` holds no certificate, as upstream's does."""
    import ssl

    from kubecommon.tls import client_ssl_context

    data = case["input"]
    ca, client = _tls_material()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for flag, content in (("--prometheus-ca-file", ca.cert_pem),
                              ("--prometheus-client-tls-cert-file", client.cert_pem),
                              ("--prometheus-client-tls-key-file", client.key_pem)):
            name = data.get(flag, "")
            if name:
                path = Path(tmp) / name
                path.write_bytes(b"not a certificate\n" if "error" in name else content)
                paths[flag] = str(path)
        try:
            context = client_ssl_context(ca_file=paths.get("--prometheus-ca-file"),
                                         cert_file=paths.get("--prometheus-client-tls-cert-file"),
                                         key_file=paths.get("--prometheus-client-tls-key-file"))
        except (ssl.SSLError, ValueError, OSError) as err:
            got: dict[str, Any] = {"success": False, "client_certificates_present": None, "min_tls_version": None}
            return Result(got == case["expected"], case["expected"], {**got, "error": str(err)})
    got = {"success": True, "client_certificates_present": bool(paths.get("--prometheus-client-tls-cert-file")),
           "min_tls_version": "1.2" if context.minimum_version >= ssl.TLSVersion.TLSv1_2 else str(context.minimum_version)}
    return _result(case["expected"], got)


@functools.cache
def _tls_material() -> tuple[Any, Any]:
    from kubecommon.tls import generate_ca, issue_certificate

    ca = generate_ca("conformance-ca", key_algorithm="ecdsa")  # P-256: fast to generate
    return ca, issue_certificate(ca, "adapter", server=False, client=True, key_algorithm="ecdsa")


def check_cli_flags(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import (
        PrometheusSettings, SettingsError, discovery_settings_from_args, settings_from_args,
    )  # fmt: skip

    data = case["input"]
    try:
        if "--prometheus-verb" in data:
            PrometheusSettings(verb=data["--prometheus-verb"])
        args = _args(data)
        settings_from_args(args)
        discovery_settings_from_args(args)
    except (SettingsError, argparse.ArgumentError) as err:
        fatal = case["expected"].get("fatal_error", "")
        value = re.findall(r'"([A-Z]+)"', fatal)[:1]
        # Messages are ours; the contract is "refuses to start, naming the bad value or flag".
        ok = bool(fatal) and (not value or value[0] in str(err))
        return Result(ok, fatal, str(err))
    return Result(not case["expected"].get("fatal_error"), case["expected"], "started")


def check_series_request(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.discovery.relist import Discovery
    from adapter.prometheus.settings import discovery_settings_from_args

    setup = case["setup"]
    compiled = _compile(setup["config"])
    settings = discovery_settings_from_args(_args(setup["flags"]))
    now = case["input"]["now_unix_ms"] / 1000.0
    prom = FakePrometheus()
    discovery = Discovery(prom, compiled, interval=settings.relist_interval,
                          max_age=settings.effective_max_age, clock=lambda: now)
    asyncio.run(discovery.relist())
    call = prom.series_calls[0]
    from adapter.prometheus.client import _fmt_time

    got = {"method": "POST", "path": "/api/v1/series",
           "query_params": {"match[]": call.matchers[0], "start": _fmt_time(call.start).rstrip("0").rstrip(".")},
           "no_end_param": False}
    return _result(case["expected"]["http_request"], got)


def check_periodic_lister(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """Upstream's lister calls back when new metrics are available; ours swaps an immutable
    snapshot and flips `ready`, which is what consumers observe instead of a callback."""
    from adapter.discovery.relist import Discovery

    compiled = _compile({"externalRules": [{"seriesQuery": "queue_depth", "metricsQuery": "queue_depth"}]})
    prom = FakePrometheus(series_by_matcher={"queue_depth": [{"__name__": "queue_depth"}]})
    discovery = Discovery(prom, compiled, interval=60.0, clock=lambda: 1000.0)
    before = discovery.snapshot
    ok = asyncio.run(discovery.relist())
    invoked = ok and discovery.ready and discovery.snapshot is not before and bool(discovery.snapshot.external_metrics())
    return _result(case["expected"], {"callback_invoked": invoked, "error": None})


CHECKERS = {
    "quantity_conversion": check_quantity,
    "custom.errors": check_custom_errors,
    "custom.response_json": check_custom_response,
    "external.errors": check_external,
    "external.response_json": check_external,
    "http.routing": check_routing,
    "resource_metrics.pods": check_resource_pods,
    "resource_metrics.nodes": check_resource_nodes,
    "cli.prometheus_header": check_headers,
    "cli.prometheus_auth": check_auth,
    "cli.prometheus_tls": check_tls,
    "cli.flags": check_cli_flags,
    "custom.discovery_http": check_series_request,
    "external.discovery": check_periodic_lister,
}
