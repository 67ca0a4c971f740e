"""THE PromQL renderer: the only place where request text (namespaces, object names, metric
label selectors) meets PromQL.

Job: build prometheus-adapter's template arguments (`.Series`, `.LabelMatchers`,
`.LabelValuesByName`, `.GroupBy`, `.GroupBySlice`) exactly as `metrics_query.go` `Build` /
`BuildExternal` do — metric-selector matchers sorted by key first, then the namespace matcher, then
the object-name matcher — execute the rule's template, and return `PromQL`.

Safety, where we deliberately differ from upstream (see hack/conformance/deviations.py):
- values are quoted with Go `strconv.Quote` (as upstream); inside `=~`/`!~` each value is
  regex-escaped with RE2 `QuoteMeta`, so `in (a.b)` or a node name `ip-10-0-0-1.ec2.internal`
  matches only itself (upstream passes them through as raw regex);
- label names (selector keys, override labels, template output) must match
  `[a-zA-Z_][a-zA-Z0-9_]*` (upstream sends them to Prometheus, which fails the query);
- a template reading `.Series` gets only a classic metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`):
  Prometheus 3 accepts any UTF-8 name, which `<<.Series>>{...}` would paste in as PromQL;
- values reaching `.LabelValuesByName` (pasted into the template verbatim by design) must be
  plain object-name characters when the template uses that field;
- the rendered query is bounded in size (`QueryTooLarge`), instead of failing in Prometheus with
  414 or a proxy's limit.
`>`/`<` selectors are rejected (`UnsupportedSelector`), as upstream. Pure; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NewType, Protocol

from kubecommon.selectors import Operator, Selector

from adapter.rules import gotemplate
from adapter.rules.gotemplate_exec import go_quote
from adapter.rules.compile import CompiledResourceQuery, CompiledResourceRules, CompiledRule
from adapter.rules.goregex import quote_meta
from adapter.rules.resources import (
    NAMESPACES,
    NODES,
    PODS,
    GroupResource,
    NoLabelForResource,
    is_valid_label_name,
)
from adapter.rules.template_args import query_template_args

__all__ = [
    "DEFAULT_MAX_QUERY_BYTES",
    "EmptyQuery",
    "InvalidLabelName",
    "InvalidLabelValue",
    "InvalidRuleLabel",
    "InvalidSeriesName",
    "LabelLookup",
    "MissingLabelMapping",
    "PromQL",
    "QueryError",
    "QueryTooLarge",
    "ResultLabels",
    "TemplateFailed",
    "UnsupportedSelector",
    "build_query",
    "pastable_series_name",
    "render_custom",
    "render_external",
    "render_resource",
    "render_resource_query",
    "result_labels",
]

PromQL = NewType("PromQL", str)
DEFAULT_MAX_QUERY_BYTES = 128 * 1024
ResourceName = Literal["cpu", "memory"]
Level = Literal["container", "node"]

class QueryError(ValueError):
    """The query cannot be built. `client_error` says whether the request (not the rule) is at
    fault: the server answers 400 for those and treats the others as a broken rule."""

    client_error = False


class UnsupportedSelector(QueryError):
    client_error = True


class InvalidLabelName(QueryError):
    client_error = True


class InvalidLabelValue(QueryError):
    client_error = True


class QueryTooLarge(QueryError):
    client_error = True


class MissingLabelMapping(QueryError):
    """The rule maps no label to a resource the query needs (e.g. namespaces)."""


class TemplateFailed(QueryError):
    pass


class InvalidRuleLabel(QueryError):
    """The rule (not the request) yields an unusable label name."""


class EmptyQuery(QueryError):
    pass


class InvalidSeriesName(QueryError):
    """A discovered series name that is no classic metric name (Prometheus data, not the request)."""


class LabelLookup(Protocol):
    def label_for(self, resource: GroupResource) -> str: ...


_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def pastable_series_name(series: str) -> bool:
    """Whether `series` may stand as `<<.Series>>` in a query: a classic metric name only
    (Prometheus 3 accepts any UTF-8 name, and a name like `x{namespace="other"} or x` would
    change the query's structure)."""
    return _METRIC_NAME.fullmatch(series) is not None
# What may be pasted verbatim into a template through .LabelValuesByName: object-name characters.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9._:@+-]*")


def _label(name: str, what: str, error: type[QueryError] | None = None) -> str:
    if not is_valid_label_name(name):
        raise (error or InvalidLabelName)(
            f"{what} {name!r} is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
        )
    return name


def _eq(label: str, value: str) -> str:
    return f"{label}={go_quote(value)}"


def _neq(label: str, value: str) -> str:
    return f"{label}!={go_quote(value)}"


def _re(label: str, values: Sequence[str]) -> str:
    return f"{label}=~{go_quote('|'.join(quote_meta(v) for v in values))}"


def _nre(label: str, values: Sequence[str]) -> str:
    return f"{label}!~{go_quote('|'.join(quote_meta(v) for v in values))}"


@dataclass(frozen=True, slots=True)
class _Matchers:
    exprs: list[str]
    values_by_name: dict[str, str]
    #: the individual request values behind each joined `values_by_name` entry (a value may itself
    #: contain `|`, so the joined text cannot be split back)
    raw_values: dict[str, tuple[str, ...]]

    def add(self, expr: str, label: str, values: Sequence[str]) -> None:
        self.exprs.append(expr)
        self.values_by_name[label] = "|".join(values)
        self.raw_values[label] = tuple(values)


def _selector_matchers(selector: Selector) -> _Matchers:
    """Metric-selector requirements (already sorted by key by the parser) -> matchers."""
    out = _Matchers([], {}, {})
    for req in sorted(selector.requirements, key=lambda r: r.key):
        key = _label(req.key, "metric selector key")
        values, op = list(req.values), req.operator
        if op in (Operator.GREATER_THAN, Operator.LESS_THAN):
            raise UnsupportedSelector(
                f"operator not supported by prometheus: {req} (use =, !=, in, notin, exists or !)"
            )
        if op is Operator.EXISTS:
            expr = _neq(key, "")
        elif op is Operator.DOES_NOT_EXIST:
            expr = _eq(key, "")
        elif op in (Operator.EQUALS, Operator.DOUBLE_EQUALS):
            expr = _eq(key, values[0]) if len(values) == 1 else _re(key, values)
        elif op is Operator.NOT_EQUALS:
            expr = _neq(key, values[0]) if len(values) == 1 else _nre(key, values)
        elif op is Operator.IN:
            expr = _re(key, values)
        else:
            expr = _nre(key, values)
        out.add(expr, key, values)
    return out


def _mapped_label(labels: LabelLookup, resource: GroupResource) -> str:
    """The rule's label for `resource`; a rule that maps none is a broken rule, not a bad request."""
    try:
        return labels.label_for(resource)
    except NoLabelForResource as err:
        raise MissingLabelMapping(str(err)) from None


def _namespace_matcher(out: _Matchers, labels: LabelLookup, namespace: str) -> None:
    label = _label(_mapped_label(labels, NAMESPACES), "namespace label", InvalidRuleLabel)
    out.add(_eq(label, namespace), label, (namespace,))


def build_query(
    template: gotemplate.Template,
    labels: LabelLookup,
    *,
    series: str,
    metric_selector: Selector,
    namespace: str | None,
    resource: GroupResource | None = None,
    names: Sequence[str] | None = None,
    extra_group_by: Sequence[str] = (),
    add_namespace: bool = True,
    group_by: str = "",
    group_by_slice: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_QUERY_BYTES,
) -> PromQL:
    """prometheus-adapter `Build` (resource given) or `BuildExternal` (resource None)."""
    matchers = _selector_matchers(metric_selector)
    slice_: list[str] = list(group_by_slice)
    try:
        if namespace and add_namespace:
            _namespace_matcher(matchers, labels, namespace)
        if resource is not None:
            slice_ = _resource_matcher(matchers, labels, resource, names, extra_group_by)
            group_by = ",".join(slice_)
    except (MissingLabelMapping, InvalidRuleLabel):
        if _reads_labels(template):
            raise  # a template that never reads the labels cannot fail on them (`series <<.Series>>`)
    if template.references("LabelValuesByName"):
        _check_plain_values(matchers.raw_values)
    if series and template.references("Series") and not pastable_series_name(series):
        raise InvalidSeriesName(f"series {series!r} is not a classic metric name; it cannot be pasted "
                                "into the query as <<.Series>> (narrow the rule's seriesQuery)")
    args = query_template_args(series=series, label_matchers=",".join(matchers.exprs),
                               values_by_name=matchers.values_by_name, group_by=group_by,
                               group_by_slice=slice_)
    try:
        text = template.render(args)  # type: ignore[arg-type]
    except gotemplate.TemplateError as err:
        raise TemplateFailed(f"metrics query template failed: {err}") from None
    if not text:
        raise EmptyQuery("empty query produced by metrics query template")
    if len(text.encode()) > max_bytes:
        raise QueryTooLarge(
            f"the query would be {len(text.encode())} bytes, over the {max_bytes}-byte limit; "
            "select fewer objects (e.g. a narrower labelSelector)"
        )
    return PromQL(text)


_LABEL_FIELDS = ("LabelMatchers", "LabelValuesByName", "GroupBy", "GroupBySlice")
#: `.` or `$` alone as an operand hands the template the whole argument struct (labels included).
_WHOLE_ARGUMENT = re.compile(r"(?:^|[\s(|=])[.$](?=[\s)|]|$)")


def _reads_labels(template: gotemplate.Template) -> bool:
    """Whether the template may read anything derived from the rule's labels."""
    if any(template.references(name) for name in _LABEL_FIELDS):
        return True
    actions = re.findall(r"<<-?(.*?)-?>>", template.source, flags=re.DOTALL)
    return any(_WHOLE_ARGUMENT.search(action.strip()) for action in actions)


def _resource_matcher(matchers: _Matchers, labels: LabelLookup, resource: GroupResource,
                      names: Sequence[str] | None, extra_group_by: Sequence[str]) -> list[str]:
    """Add the object-name matcher (one name: `=`, several: escaped `=~`, None: none) and return
    the group-by labels: the resource's label, then `extra_group_by`."""
    resource_label = _label(_mapped_label(labels, resource), f"label for {resource}", InvalidRuleLabel)
    if names is not None:
        if len(names) == 1:
            expr = _eq(resource_label, names[0])
        else:  # upstream: `label=""` for no names, `=~"a|b"` for several
            expr = _re(resource_label, names) if names else _eq(resource_label, "")
        matchers.add(expr, resource_label, names)
    return [resource_label, *(_label(g, "group-by label", InvalidRuleLabel) for g in extra_group_by)]


def _check_plain_values(raw_values: dict[str, tuple[str, ...]]) -> None:
    for label, values in raw_values.items():
        for value in values:
            if not _PLAIN_VALUE.fullmatch(value):
                raise InvalidLabelValue(
                    f"value {value!r} for {label} contains characters that cannot be pasted into "
                    "this rule's query (it uses .LabelValuesByName)"
                )


def render_custom(
    rule: CompiledRule,
    *,
    series_name: str,
    resource: GroupResource,
    namespace: str | None,
    names: Sequence[str] | None,
    metric_selector: Selector,
    max_bytes: int = DEFAULT_MAX_QUERY_BYTES,
) -> PromQL:
    """Query for a custom metric of `resource` objects (`names=None`: every object, no name
    matcher; the caller filters). Upstream adds the namespace whenever one is given."""
    return build_query(
        rule.query_template, rule.mapper, series=series_name, metric_selector=metric_selector,
        namespace=namespace, resource=resource, names=names, max_bytes=max_bytes,
    )  # fmt: skip


def render_external(
    rule: CompiledRule,
    *,
    series_name: str,
    namespace: str | None,
    metric_selector: Selector,
    max_bytes: int = DEFAULT_MAX_QUERY_BYTES,
) -> PromQL:
    """Query for an external metric; `.GroupBy` is always empty, as upstream."""
    return build_query(
        rule.query_template, rule.mapper, series=series_name, metric_selector=metric_selector,
        namespace=namespace, add_namespace=rule.namespaced, max_bytes=max_bytes,
    )  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultLabels:
    """Which labels of a resource query's result identify the object (and container)."""

    object_label: str
    namespace_label: str | None
    container_label: str | None


def result_labels(rules: CompiledResourceRules, *, resource: ResourceName, level: Level) -> ResultLabels:
    query = rules.cpu if resource == "cpu" else rules.memory
    target = NODES if level == "node" else PODS
    return ResultLabels(
        object_label=_mapped_label(query.mapper, target),
        namespace_label=query.mapper.label_or_none(NAMESPACES) if level == "container" else None,
        container_label=query.container_label if level == "container" else None,
    )


def render_resource(
    rules: CompiledResourceRules,
    *,
    resource: ResourceName,
    level: Level,
    namespace: str | None,
    names: Sequence[str] | None,
    max_bytes: int = DEFAULT_MAX_QUERY_BYTES,
) -> PromQL:
    """metrics.k8s.io query: `containerQuery` for pods (grouped by pod and container label) or
    `nodeQuery` for nodes, as prometheus-adapter's resource provider builds them."""
    return render_resource_query(rules.cpu if resource == "cpu" else rules.memory, level=level,
                                 namespace=namespace, names=names, max_bytes=max_bytes)


def render_resource_query(
    query: CompiledResourceQuery,
    *,
    level: Level,
    namespace: str | None,
    names: Sequence[str] | None,
    max_bytes: int = DEFAULT_MAX_QUERY_BYTES,
) -> PromQL:
    """`render_resource` for one of `resourceRules.cpu` / `.memory`."""
    extra: tuple[str, ...]
    if level == "node":
        template, target, extra = query.node_template, NODES, ()
    else:
        template, target, extra = query.container_template, PODS, (query.container_label,)
    return build_query(
        template, query.mapper, series="", metric_selector=Selector.empty(),
        namespace=namespace, resource=target, names=names, extra_group_by=extra,
        max_bytes=max_bytes,
    )  # fmt: skip
