"""Adapter conformance, the registry's family of cases: which metric a relist registers and how
a request finds it (`custom.registry_query`, `custom.discovery_semantics`, `custom.discovery_list`),
the PromQL a custom or external request renders, and the resource metrics' queries.

Each checker takes (case, fixtures) and returns `Result(ok, expected, got)` (adapter_compare);
`series_from_rule` infers a series from a rule for cases that list none.

Non-goals: the rule engine's own cases (adapter_rules), the services' HTTP answers
(adapter_services), running cases (adapter_runner).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from adapter.rules import query
from adapter.rules.compile import CompiledConfig, CompiledRule
from adapter.rules.resources import DEFAULT_TABLE, GroupResource, ResourceTable, is_root_scoped_for_discovery
from adapter.services.errors import MetricNotFound
from hack.conformance.adapter_compare import Result, Unsupported, judge
from hack.conformance.adapter_rules import compile_case, judge_outcome
from kubecommon import status
from kubecommon.selectors import parse_selector




def _table(fixtures: Mapping[str, Any], name: str | None) -> ResourceTable:
    if name and name in fixtures:
        return ResourceTable.from_kinds(fixtures[name]["kinds"])
    return DEFAULT_TABLE


@dataclass(frozen=True, slots=True)
class _Entry:
    rule: CompiledRule
    series_name: str


def _set_series(rules: Sequence[CompiledRule], series_per_rule: Sequence[Sequence[Mapping[str, Any]]]
                ) -> dict[tuple[GroupResource, str, bool], _Entry]:
    """Upstream `SetSeries` as the registry test drives it (series given per rule, no filters)."""
    info: dict[tuple[GroupResource, str, bool], _Entry] = {}
    for rule, series_list in zip(rules, series_per_rule, strict=True):
        for series in series_list:
            name = rule.expand_name(series["name"])
            if name is None:
                continue
            for resource in rule.resources_for(list(series.get("labels", {}))):
                key = (resource, name, not is_root_scoped_for_discovery(resource))
                info[key] = _Entry(rule, series["name"])
    return info


def check_registry_query(case: Mapping[str, Any], fixtures: Mapping[str, Any], *, setup: Mapping[str, Any]) -> Result:
    table = _table(fixtures, setup.get("rest_mapper_fixture"))
    compiled = compile_case({"rules": fixtures[setup["config_fixture"]]["rules"]}, table)
    info = _set_series(compiled.custom, setup["series_per_rule"])
    data, expected = case["input"], case["expected"]
    gr = data["metric_info"]["group_resource"]
    resource = table.normalize_or_pass(gr.get("group", ""), gr["resource"])
    key = (resource, data["metric_info"]["metric"], bool(data["metric_info"]["namespaced"]))
    entry = info.get(key)
    names = data.get("resource_names", [])
    metric = data["metric_info"]["metric"]
    observed: dict[str, Any] = {"metric": metric, "group_resource": str(resource), "namespaced": key[2]}
    if entry is None or not names:
        body = MetricNotFound.for_resource(str(resource), metric).to_dict()
        return judge_outcome(expected, {**observed, "found": False, "success": False, "error": body["message"],
                                        "http": {k: body[k] for k in ("code", "reason", "message", "status", "kind")
                                                 if k in body}})
    try:
        selector = parse_selector(data.get("metric_selector", ""))
        got = query.render_custom(
            entry.rule, series_name=entry.series_name, resource=resource,
            namespace=data.get("namespace") or None, names=names, metric_selector=selector,
        )  # fmt: skip
    except (query.QueryError, ValueError) as err:
        return judge_outcome(expected, {**observed, "found": False, "success": False, "error": str(err)})
    return judge_outcome(expected, {**observed, "found": True, "success": True, "query": str(got),
                                    "queries_issued_unordered": [str(got)], "metric_selector": str(selector)})


def _discover(compiled: CompiledConfig, series: Sequence[Mapping[str, str]]) -> Any:
    from adapter.discovery.registry import build_registry

    return build_registry(compiled, {rule.series_query: series for rule in (*compiled.custom, *compiled.external)})


def _listing(compiled: CompiledConfig, series: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """Everything one relist of `series` lists: the metric infos before and after it, and the
    custom metrics API's discovery document built from the registry it swaps in."""
    from adapter.server.discovery_docs import custom_resources
    from hack.conformance.adapter_relist import relisted

    before, after = relisted(compiled, series)
    resources = custom_resources(_discover(compiled, series).custom_metrics())
    names = [r["name"] for r in resources]
    return {"before_relist": before, "metrics_unordered": after, "after_relist_unordered": after,
            "api_resources_unordered": resources, "discovery_names_unordered": names,
            "discovery_resource_names": sorted({n.split("/", 1)[0] for n in names}),
            "discovery_unordered": [{"name": r["name"], "namespaced": r["namespaced"]} for r in resources]}


def _judge_listing(expected: Mapping[str, Any], got: dict[str, Any]) -> Result:
    want = dict(expected)
    if isinstance(want.get("discovery"), list):
        want["discovery_unordered"] = want.pop("discovery")
    if isinstance(want.get("discovery_resource_names"), list):
        want["discovery_resource_names"] = sorted(want["discovery_resource_names"])
    return judge(want, got)


def check_discovery_semantics(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """The metrics one relist registers from the case's series: before it (nothing) and after."""
    setup = case.get("setup", {})
    rules = [case["rule"]] if "rule" in case else fixtures[setup["config_fixture"]]["rules"]
    compiled = compile_case({"rules": rules}, _table(fixtures, setup.get("rest_mapper_fixture")))
    data = case["input"]
    first = data.get("discovered_series", data.get("relist_1", []))
    got = _listing(compiled, first)
    if isinstance(data.get("relist_2"), list):  # a second relist answering these series
        from hack.conformance.adapter_relist import relisted_twice

        got["registry_after_relist_2"], got["kept_missing_after_relist_2"] = relisted_twice(
            compiled, first, data["relist_2"])
    return _judge_listing(case["expected"], got)


def check_discovery_list(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    compiled = compile_case({"rules": [case["rule"]]})
    return _judge_listing(case["expected"], _listing(compiled, case["input"]["discovered_series"]))


# --- requests -> PromQL ---------------------------------------------------------------------


def case_series(case: Mapping[str, Any], rule: CompiledRule) -> list[dict[str, str]]:
    """The case's discovered series, else one inferred from the rule's seriesQuery."""
    series = case.get("input", {}).get("discovered_series")
    return [dict(s) for s in series] if series else [series_from_rule(rule)]


def series_from_rule(rule: CompiledRule) -> dict[str, str]:
    """A series the rule's seriesQuery would return: its metric name plus every mapped label."""
    match = re.search(r'^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)|__name__\s*=~?\s*"\^?([a-zA-Z_:][a-zA-Z0-9_:]*)\$?"',
                      rule.series_query)
    if match is None:
        raise Unsupported("cannot infer a series name from the seriesQuery (the case lists no series)")
    labels = {"__name__": match.group(1) or match.group(2)}
    labels.update({label: "x" for label in rule.mapper.overrides})
    for common in ("namespaces", "pods", "services", "nodes", "deployments.apps"):
        label = rule.label_for(GroupResource.parse(common))  # template rules: the usual labels
        if label is not None:
            labels.setdefault(label, "x")
    return labels


def _parse_http(text: str) -> tuple[list[str], dict[str, str]]:
    method, _, target = text.partition(" ")
    parts = urlsplit(target)
    params = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    return [unquote(p) for p in parts.path.strip("/").split("/")], params


def _request(http: str, parse: Callable[..., Any], *selectors: str) -> Any:
    """The request the adapter's own path parser makes of `http` (its tail after /apis/<group>/<version>/
    and the named selector parameters); a `StatusError` when it refuses the request."""
    path, params = _parse_http(http)
    return parse("/".join(path[3:]), *(params.get(name) for name in selectors))


def _judged_render(expected: Mapping[str, Any], observed: dict[str, Any], render: Callable[[], Any],
                   request: Any) -> Result:
    """The verdict on rendering the found metric's query for `request` (the product's renderer)."""
    try:
        got = render()
    except query.QueryError as err:
        return judge_outcome(expected, {**observed, "found": True, "success": False, "error": str(err)})
    return judge_outcome(expected, {**observed, "found": True, "success": True, "query": str(got),
                                    "queries_issued_unordered": [str(got)],
                                    "metric_selector": str(request.metric_selector), "metric": request.metric})


def check_custom_request(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server.handlers.custom_metrics import parse_path

    compiled = compile_case({"rules": [case["rule"]]})
    registry = _discover(compiled, case_series(case, compiled.custom[0]))
    expected = case["expected"]
    try:
        request = _request(case["input"]["http"], parse_path, "labelSelector", "metricLabelSelector")
    except status.StatusError as err:
        return judge_outcome(expected, {"success": False, "error": err.message})
    namespaced = request.namespace is not None
    observed: dict[str, Any] = {"resolved_request": {
        "group_resource": str(request.resource), "namespaced": namespaced, "name": request.name or "*",
        "namespace": request.namespace or ""}}  # fmt: skip
    entry = registry.lookup_custom(request.resource, request.metric, namespaced=namespaced)
    if entry is None:
        missing = MetricNotFound.for_resource(str(request.resource), request.metric).message
        return judge_outcome(expected, {**observed, "found": False, "success": False, "error": missing})
    names = case["input"].get("kube_list_result_names") if request.name is None else [request.name]
    return _judged_render(expected, observed, lambda: query.render_custom(
        entry.rule, series_name=entry.series_name, resource=request.resource, namespace=request.namespace,
        names=names, metric_selector=request.metric_selector), request)


def check_external_request(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.server.discovery_docs import external_resources
    from adapter.server.handlers.external_metrics import parse_path

    compiled = compile_case({"externalRules": [case["rule"]]})
    registry = _discover(compiled, case_series(case, compiled.external[0]))
    expected = case["expected"]
    try:
        request = _request(case["input"]["http"], parse_path, "labelSelector")
    except status.StatusError as err:
        return judge_outcome(expected, {"success": False, "error": err.message})
    entries = [e for e in external_resources(registry.external_metrics()) if e["name"] == request.metric]
    observed: dict[str, Any] = {"discovery_entry": entries[0] if len(entries) == 1 else entries}
    entry = registry.lookup_external(request.metric)
    if entry is None:
        missing = MetricNotFound.for_resource("namespaces", request.metric).message
        return judge_outcome(expected, {**observed, "found": False, "success": False, "error": missing})
    return _judged_render(expected, observed, lambda: query.render_external(
        entry.rule, series_name=entry.series_name, namespace=request.namespace,
        metric_selector=request.metric_selector), request)


def check_resource_query(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    fixture = fixtures[case["setup"]["config_fixture"]]
    compiled = compile_case({"resourceRules": fixture["resourceRules"]})
    assert compiled.resource is not None
    data = case["input"]
    resource, level_text = data["rule"].split(".")
    level = "node" if level_text == "nodeQuery" else "container"
    try:
        got = query.render_resource(compiled.resource, resource=resource, level=level,  # type: ignore[arg-type]
                                    namespace=data.get("namespace") or None, names=data["names"])
    except query.QueryError as err:
        return judge_outcome(case["expected"], {"success": False, "error": str(err)})
    return judge_outcome(case["expected"], {"success": True, "query": str(got), "queries_issued_unordered": [str(got)]})


def _with_setup(checker: Callable[..., Result]) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Result]:
    """Resolve `setup: {same_setup_as: id}` against the file's cases (the runner indexes them)."""

    def run(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
        setup = case.get("setup", {})
        seen: set[str] = set()
        while "same_setup_as" in setup:
            ref = setup["same_setup_as"]
            other = fixtures.get("__cases__", {}).get(ref)
            if other is None or ref in seen:
                raise Unsupported(f"setup {ref!r} not found in the file")
            seen.add(ref)
            setup = other.get("setup", {})
        return checker(case, fixtures, setup=setup)

    return run


CHECKERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Result]] = {
    "custom.registry_query": _with_setup(check_registry_query),
    "custom.discovery_semantics": check_discovery_semantics,
    "custom.discovery_list": check_discovery_list,
    "custom.request_to_promql": check_custom_request,
    "external.request_to_promql": check_external_request,
    "resource_metrics.query_build": check_resource_query,
}
