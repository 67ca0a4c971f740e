"""Compile the rule file once into immutable behaviour: `CompiledRule`s and resource rules.

Job: everything prometheus-adapter checks at start (`NamersFromConfig`, `NewResourceConverter`,
`NewMetricsQuery`) — regexes compile, `is`/`isNot` exclusive, `name.as` default ($0 / $1, an error
with ≥2 groups), the resource template contains `<<.Resource>>`, templates parse, overrides name a
resource — plus what would otherwise fail on every query (unknown template fields, an empty
seriesQuery), collected into one `ConfigError` naming file, rule, field and line. Handlers never
see raw config. Non-goals: warnings about rules that load but misbehave (`adapter.rules.lint`),
query rendering (`adapter.rules.query`). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from adapter.config.errors import ConfigError, Problem
from adapter.config.model import AdapterConfig, DiscoveryRule, ResourceMapping, ResourceRule
from adapter.rules import gotemplate, goregex
from adapter.rules.gotemplate_exec import go_quote
from adapter.rules.resources import DEFAULT_TABLE, GroupResource, LabelMapper, ResourceTable
from adapter.rules.template_args import QUERY_FIELDS

__all__ = [
    "CompiledConfig",
    "CompiledResourceQuery",
    "CompiledResourceRules",
    "CompiledRule",
    "RuleKind",
    "RuleRef",
    "SeriesFilter",
    "compile_config",
]

_LABEL_TEMPLATE_FIELDS = {"Group": "string", "Resource": "string"}
_Bad = Callable[[str, str], None]  # reports (field path, reason) for the rule being compiled


class RuleKind(StrEnum):
    CUSTOM = "custom"
    EXTERNAL = "external"
    RESOURCE = "resource"


@dataclass(frozen=True, slots=True)
class RuleRef:
    """Where a rule sits: `config.yaml: rules[3]`."""

    source: str
    location: str

    def __str__(self) -> str:
        return f"{self.source}: {self.location}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesFilter:
    """`is` / `isNot` on the series name (unanchored search, as Go `MatchString`)."""

    pattern: goregex.GoPattern
    positive: bool

    def matches(self, series_name: str) -> bool:
        return (self.pattern.search(series_name) is not None) == self.positive


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompiledRule:
    """One `rules[]` / `externalRules[]` entry, ready for discovery and querying."""

    ref: RuleRef
    kind: RuleKind
    series_query: str
    filters: tuple[SeriesFilter, ...]
    """`seriesFilters` then the implicit `is` filter from `name.matches` (if set)."""
    name_pattern: goregex.GoPattern
    name_as: str
    mapper: LabelMapper
    query_template: gotemplate.Template
    namespaced: bool
    """`resources.namespaced` (default true): external rules add the request namespace."""
    rule: DiscoveryRule

    def accepts_series(self, series_name: str) -> bool:
        return all(f.matches(series_name) for f in self.filters)

    def expand_name(self, series_name: str) -> str | None:
        """Go `ExpandString` of `name.as` on the leftmost match; None if no match."""
        match = self.name_pattern.search(series_name)
        return None if match is None else goregex.expand(self.name_as, self.name_pattern, match)

    def metric_name(self, series_name: str) -> str | None:
        """API metric name, or None when the filters reject the series or the name expands to
        "" (which no API path can address)."""
        if not self.accepts_series(series_name):
            return None
        return self.expand_name(series_name) or None

    def resources_for(self, labels: Mapping[str, str] | Iterable[str]) -> tuple[GroupResource, ...]:
        """Resources this series' label names identify (overrides, then template + table)."""
        return self.mapper.resources_for(labels)

    def label_for(self, resource: GroupResource) -> str | None:
        return self.mapper.label_or_none(resource)

    def resource_for_label(self, label: str) -> GroupResource | None:
        return self.mapper.resource_for_label(label)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompiledResourceQuery:
    """`resourceRules.cpu` or `.memory`."""

    ref: RuleRef
    container_template: gotemplate.Template
    node_template: gotemplate.Template
    mapper: LabelMapper
    container_label: str
    rule: ResourceRule


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompiledResourceRules:
    cpu: CompiledResourceQuery
    memory: CompiledResourceQuery
    window_seconds: float
    window: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompiledConfig:
    custom: tuple[CompiledRule, ...]
    external: tuple[CompiledRule, ...]
    resource: CompiledResourceRules | None
    source: str
    config: AdapterConfig = field(repr=False)

    @property
    def series_queries(self) -> tuple[str, ...]:
        """Distinct seriesQuery strings of custom and external rules, in first-seen order."""
        return tuple(dict.fromkeys(r.series_query for r in (*self.custom, *self.external)))


class _Collector:
    """Collects problems with file/rule/field/line for one config."""

    def __init__(self, cfg: AdapterConfig) -> None:
        self.cfg = cfg
        self.problems: list[Problem] = []

    def add(self, location: str, field_path: str, reason: str, series_query: str | None = None) -> None:
        self.problems.append(Problem(
            source=self.cfg.source, location=location, field=field_path, reason=reason,
            line=self.cfg.line_of(f"{location}.{field_path}" if field_path else location),
            series_query=series_query or None,
        ))  # fmt: skip


def compile_config(cfg: AdapterConfig, *, table: ResourceTable = DEFAULT_TABLE) -> CompiledConfig:
    """Compile every rule; raise one ConfigError listing all problems."""
    out = _Collector(cfg)
    custom = _compile_list(cfg.rules, "rules", RuleKind.CUSTOM, out, table)
    external = _compile_list(cfg.external_rules, "externalRules", RuleKind.EXTERNAL, out, table)
    resource = None
    if cfg.resource_rules is not None:
        rr = cfg.resource_rules
        cpu = _compile_resource(rr.cpu, "resourceRules.cpu", out, table)
        memory = _compile_resource(rr.memory, "resourceRules.memory", out, table)
        if cpu is not None and memory is not None:
            resource = CompiledResourceRules(
                cpu=cpu, memory=memory, window_seconds=rr.window_seconds, window=rr.window
            )
    if out.problems:
        raise ConfigError(out.problems)
    return CompiledConfig(custom=custom, external=external, resource=resource, source=cfg.source, config=cfg)


def _compile_list(
    rules: tuple[DiscoveryRule, ...], list_name: str, kind: RuleKind, out: _Collector, table: ResourceTable
) -> tuple[CompiledRule, ...]:
    compiled = []
    for index, rule in enumerate(rules):
        result = _compile_rule(rule, RuleRef(out.cfg.source, f"{list_name}[{index}]"), kind, out, table)
        if result is not None:
            compiled.append(result)
    return tuple(compiled)


def _compile_rule(
    rule: DiscoveryRule, ref: RuleRef, kind: RuleKind, out: _Collector, table: ResourceTable
) -> CompiledRule | None:
    before = len(out.problems)
    loc, sq = ref.location, rule.series_query

    def bad(field_path: str, reason: str) -> None:
        out.add(loc, field_path, reason, sq)

    if not rule.series_query.strip():
        bad("seriesQuery", "seriesQuery is required (the series selector discovery sends to Prometheus)")
    filters = [_filter(f.is_, f.is_not, f"seriesFilters[{i}]", bad) for i, f in enumerate(rule.series_filters)]
    name_pattern = _regex(rule.name.matches or ".*", "name.matches", bad)
    name_as = rule.name.as_
    if name_pattern is not None and rule.name.matches:
        filters.append(SeriesFilter(pattern=name_pattern, positive=True))
    if name_pattern is not None and not name_as:
        if name_pattern.groups > 1:
            bad("name.as", f"must specify an 'as' value for name matcher {go_quote(rule.name.matches)} "
                "(it has more than one capture group)")  # fmt: skip
        name_as = "$1" if name_pattern.groups == 1 else "$0"
    mapper = _mapper(rule.resources, "resources", bad, table)
    template = _template(rule.metrics_query, "metricsQuery", bad)
    if len(out.problems) > before or name_pattern is None or mapper is None or template is None:
        return None
    return CompiledRule(
        ref=ref, kind=kind, series_query=rule.series_query,
        filters=tuple(f for f in filters if f is not None), name_pattern=name_pattern,
        name_as=name_as, mapper=mapper, query_template=template,
        namespaced=rule.resources.namespaced is not False, rule=rule,
    )  # fmt: skip


def _compile_resource(
    rule: ResourceRule, location: str, out: _Collector, table: ResourceTable
) -> CompiledResourceQuery | None:
    before = len(out.problems)

    def bad(field_path: str, reason: str) -> None:
        out.add(location, field_path, reason)

    container = _template(rule.container_query, "containerQuery", bad)
    node = _template(rule.node_query, "nodeQuery", bad)
    mapper = _mapper(rule.resources, "resources", bad, table)
    if len(out.problems) > before or container is None or node is None or mapper is None:
        return None
    return CompiledResourceQuery(
        ref=RuleRef(out.cfg.source, location), container_template=container, node_template=node,
        mapper=mapper, container_label=rule.container_label, rule=rule,
    )  # fmt: skip


def _regex(pattern: str, field_path: str, bad: _Bad) -> goregex.GoPattern | None:
    try:
        return goregex.compile_re2(pattern)
    except goregex.RegexError as err:
        bad(field_path, str(err))
        return None


def _filter(is_: str, is_not: str, field_path: str, bad: _Bad) -> SeriesFilter | None:
    if is_ and is_not:
        bad(field_path, f"cannot have both an `is` ({go_quote(is_)}) and `isNot` ({go_quote(is_not)}) "
                        "expression in a single filter")
        return None
    if not is_ and not is_not:
        bad(field_path, "must have either an `is` or `isNot` expression in a filter")
        return None
    pattern = _regex(is_ or is_not, f"{field_path}.{'is' if is_ else 'isNot'}", bad)
    return None if pattern is None else SeriesFilter(pattern=pattern, positive=bool(is_))


def _template(text: str, field_path: str, bad: _Bad) -> gotemplate.Template | None:
    try:
        return gotemplate.parse(text, fields=QUERY_FIELDS)
    except gotemplate.TemplateError as err:
        bad(field_path, f"unable to parse metrics query template: {err}")
        return None


def _mapper(mapping: ResourceMapping, field_path: str, bad: _Bad, table: ResourceTable) -> LabelMapper | None:
    overrides: dict[str, GroupResource] = {}
    for override in mapping.overrides:
        target = override.target
        if not target.resource:
            bad(f"{field_path}.overrides.{override.label}.resource",
                "unable to normalize group-resource: `resource` is required")  # fmt: skip
            continue
        overrides[override.label] = table.normalize_or_pass(target.group, target.resource)
    template = extractor = None
    if mapping.template:
        where = f"{field_path}.template"
        try:
            template = gotemplate.parse(mapping.template, fields=_LABEL_TEMPLATE_FIELDS)
            extractor = _extractor(template)
        except (gotemplate.TemplateError, ValueError) as err:
            bad(where, f"unable to generate label format from template {go_quote(mapping.template)}: {err}")
            return None
    return LabelMapper(
        overrides=MappingProxyType(overrides), template=template, extractor=extractor, table=table
    )


def _extractor(template: gotemplate.Template) -> goregex.GoPattern:
    """The template as an anchored regex, as upstream `newLabelGroupResExtractor` builds it."""
    raw = template.render({"Group": "(?P<group>.+?)", "Resource": "(?P<resource>.+?)"})
    if not raw:
        raise ValueError("unable to convert label template to matcher: empty template")
    try:
        pattern = goregex.compile_re2(f"^{raw}$")
    except goregex.RegexError as err:
        raise ValueError(f"unable to convert label template to matcher: {err}") from None
    if "resource" not in pattern.groupindex:
        raise ValueError("must include at least `{{.Resource}}` in the label template "
                         "(write <<.Resource>>; the delimiters are << and >>)")  # fmt: skip
    return pattern

