"""Adapter conformance, the rule engine's family of cases: PromQL built from a metricsQuery
template (custom, external, selector to matchers), series filters, naming (`name.as`) and loading
a rule file (`config.parse`, the start-up check of resource overrides included).

Each checker takes (case, fixtures) and returns `Result(ok, expected, got)` (adapter_compare);
`compile_case` loads a case's rules for the other families too.

Non-goals: the registry, discovery and request paths (adapter_registry), the services' HTTP
answers (adapter_services), running cases (adapter_runner).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from adapter.config import ConfigError, parse_config
from adapter.config.load import PARSE_STAGE
from adapter.discovery.reload import log_refused_at_start
from adapter.discovery.served import OverrideNotServed, check_overrides_served
from adapter.rules import gotemplate, query
from adapter.rules.gotemplate_exec import go_quote
from adapter.rules.compile import CompiledConfig, compile_config
from adapter.rules.query import build_query
from adapter.rules.resources import DEFAULT_TABLE, GroupResource, ResourceTable
from adapter.rules.template_args import QUERY_FIELDS
from hack.conformance.adapter_compare import PROVENANCE_FIELDS, Result, Unsupported, matches
from kubecommon.selectors import parse_selector


class _Identity:
    """The Go tests' mock converter: a resource's label is its `.Resource` string."""

    def label_for(self, resource: GroupResource) -> str:
        return resource.resource


def _strip_comments(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_comments(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_strip_comments(v) for v in value]
    return value


def compile_case(doc: Mapping[str, Any], table: ResourceTable = DEFAULT_TABLE) -> CompiledConfig:
    return compile_config(parse_config(json.dumps(_strip_comments(doc)), source="case"), table=table)


def _error_matches(expected: str, got: str) -> bool:
    """Upstream messages embed Go-formatted values: every stretch of upstream's wording and every
    value it quotes must appear in ours, in order (the values may be quoted the Python way here,
    so the quote marks are not compared); its parenthetical remarks are not. A trailing remark
    about the wording ("(exact text is Go-template specific)") is not part of it; a Go template's
    error names the field it met."""
    text = re.sub(r"\s*\([^()]*\)\s*$", "", expected)
    if text.startswith("template execution error"):
        field = re.search(r"field (\w+)", text)
        return bool(got) and (field is None or field.group(1) in got)
    low, at = got.lower(), 0
    for piece in re.split(r'"([^"]*)"|\([^()]*\)', text):  # a quoted value is a piece of its own
        piece = (piece or "").strip(" ;:,").lower()
        if len(piece) < 3:
            continue
        found = low.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def judge_outcome(expected: Mapping[str, Any], observed: Mapping[str, Any]) -> Result:
    """The verdict on an observation (`success` and either `error` or the value built): every
    stated field is compared; `error` by its stable phrase (`_error_matches`), "" meaning no
    error; a value stated for a call that failed (or an error for one that did not) mismatches."""
    ok = True
    for key, want in expected.items():
        if want is None or key in PROVENANCE_FIELDS:
            continue
        if key in ("error", "fatal_error"):  # an error's stable phrase; "" means no error
            ok &= ("error" not in observed) if want == "" else (
                "error" in observed and _error_matches(str(want), str(observed["error"])))
        elif key == "startup_error_contains":
            ok &= "error" in observed and str(want) in str(observed["error"])
        else:
            ok &= key in observed and matches(want, observed[key], key)
    return Result(ok, {k: v for k, v in expected.items() if v is not None}, dict(observed))


def _build(case: Mapping[str, Any], *, external: bool) -> Result:
    rule, data = case.get("rule", {}), case["input"]
    expected = case["expected"]
    namespaced = rule.get("resources", {}).get("namespaced", True) is not False
    try:
        template = gotemplate.parse(rule.get("metricsQuery", ""), fields=QUERY_FIELDS)
        selector = parse_selector(data.get("metric_selector", ""))
        if external or data.get("api") == "external":
            got = build_query(
                template, _Identity(), series=data.get("series", ""), metric_selector=selector,
                namespace=data.get("namespace") or None, add_namespace=namespaced,
                group_by=data.get("group_by", ""), group_by_slice=data.get("group_by_slice", []),
            )  # fmt: skip
        else:
            res = data.get("resource") or {"group": "", "resource": ""}  # Go's zero GroupResource
            got = build_query(
                template, _Identity(), series=data.get("series", ""), metric_selector=selector,
                namespace=data.get("namespace") or None,
                resource=GroupResource(res.get("group", ""), res["resource"]),
                names=data.get("names", []), extra_group_by=data.get("extra_group_by", []),
            )  # fmt: skip
    except (gotemplate.TemplateError, query.QueryError, ValueError) as err:
        return judge_outcome(expected, {"success": False, "error": str(err)})
    return judge_outcome(expected, {"success": True, "query": str(got)})


def check_build(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    return _build(case, external=False)


def check_build_external(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    return _build(case, external=True)


def check_series_filter(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    rule = {"seriesQuery": "up", **case["rule"]}
    expected = case["expected"]
    try:
        compiled = compile_case({"rules": [rule]}).custom[0]
    except ConfigError as err:
        return judge_outcome(expected, {"success": False, "error": str(err)})
    matches = {name: compiled.accepts_series(name) for name in case["input"].get("names", [])}
    return judge_outcome(expected, {"success": True, "matches": matches})


def check_naming(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    rule = {"seriesQuery": "up", **case["rule"]}
    expected = case["expected"]
    try:
        compiled = compile_case({"rules": [rule]}).custom[0]
    except ConfigError as err:
        return judge_outcome(expected, {"success": False, "error": str(err)})
    name = case["input"]["series_name"]
    got = compiled.expand_name(name)
    if got is None:  # Go: MetricNameForSeries fails
        pattern = str(getattr(compiled.name_pattern, "pattern", ""))
        error = f"series name {go_quote(name)} did not match expected pattern {go_quote(pattern)}"
        return judge_outcome(expected, {"success": False, "error": error})
    # `name` is the metric name a series gets (FIELDS.md's naming fields: metric_name, name)
    return judge_outcome(expected, {"success": True, "metric_name": got, "name": got})


def _load_case_config(case: Mapping[str, Any]) -> None:
    """Load the case's rules as the adapter's start does; a refused file is logged as it logs it."""
    try:
        if "rule" in case:
            _served(compile_case({"rules": [case["rule"]]}), case.get("input", {}).get("cluster_has_resource"))
        elif "config" in case or "config" in case.get("input", {}):
            compile_case(case.get("config") or case["input"]["config"])
        elif isinstance(case.get("input", {}).get("yaml"), str):
            compile_config(parse_config(case["input"]["yaml"], source="case.yaml"))
        else:
            excerpt = case["input"].get("excerpt")
            if not excerpt:
                raise Unsupported("the case names a file but gives no text to load")
            text = "rules:\n- seriesQuery: up\n  " + excerpt + "\n"
            parse_config(text, source="excerpt.yaml")
    except ConfigError as err:
        log_refused_at_start(err)  # what adapter.app.main logs before it exits
        raise


def check_config_parse(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    expected = case["expected"]
    want = expected.get("startup_error_contains") or expected.get("error") or expected.get("fatal_error") or ""
    success = expected.get("success")  # True: must load; False: must be refused (any message)
    try:
        _load_case_config(case)
    except (ConfigError, OverrideNotServed) as err:
        if not want and success is False:
            return Result(True, expected, f"error: {err}")
        if not want or success is True:  # the case expects the file to load
            return Result(False, "loaded without error", f"error: {err}")
        text, oks = str(err), []
        for key in ("startup_error_contains", "error", "fatal_error"):  # each one stated
            stated = expected.get(key)
            if not stated:
                continue
            if key == "startup_error_contains":
                oks.append(str(stated) in text)
            elif "yaml:" in str(stated):
                oks.append(_refused_as_yaml(str(stated), err))
            else:
                oks.append(_error_matches(str(stated), text))
        return Result(all(oks), want, text)
    return Result(not want and success is not False, want or expected, "loaded without error")


def _refused_as_yaml(want: str, err: Exception) -> bool:
    """Go's yaml.v2 wording differs from ours; the contract is "refused while parsing the file"
    (ours says so with upstream's own prefix: YAML syntax, an unknown key, a wrong shape), naming
    the same unknown field and type when upstream's does."""
    if not (isinstance(err, ConfigError) and err.stage == PARSE_STAGE):
        return False
    named = [name for pair in re.findall(r"field (\S+) not found in type (\S+)", want) for name in pair]
    return all(name in str(err) for name in named)


def _served(compiled: CompiledConfig, served: Mapping[str, bool] | None) -> None:
    """The adapter's start-up check of the overrides, against the case's `cluster_has_resource`
    (`"group/resource": bool`; a resource it does not list is served)."""
    import asyncio

    from kubecommon.kube.errors import UnknownResource

    unserved = {DEFAULT_TABLE.normalize_or_pass(*(key.rpartition("/")[::2] if "/" in key else ("", key)))
                for key, value in (served or {}).items() if value is False}

    async def resolve(group: str, resource: str) -> None:
        if GroupResource(group, resource) in unserved:
            raise UnknownResource(group, resource)

    asyncio.run(check_overrides_served(compiled, resolve))


CHECKERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Result]] = {
    "metrics_query.build (custom/resource path)": check_build,
    "metrics_query.build_external": check_build_external,
    "metrics_query.selector_to_promql": check_build_external,
    "series_filter": check_series_filter,
    "naming": check_naming,
    "config.parse": check_config_parse,
}
