"""The rule file as data: frozen dataclasses mirroring prometheus-adapter's YAML schema.

Job: hold exactly what the file says, with every field prometheus-adapter (v0.12) accepts, under
its Python name, documented where declared. Non-goals: validation beyond the YAML shape (that is
`load.py`), and behaviour (regexes, templates, resource mapping are compiled by `adapter.rules`).

Schema (YAML key -> field):

    rules / externalRules: [DiscoveryRule]
      seriesQuery      -> series_query      series selector sent as match[] to /api/v1/series
      seriesFilters    -> series_filters    [{is: re} | {isNot: re}] on the series name
      resources        -> resources         {template, overrides: {label: {group, resource}}, namespaced}
      name             -> name              {matches: re, as: Go Expand template}
      metricsQuery     -> metrics_query     Go template (<< >>) rendering the PromQL
    resourceRules: {cpu: ResourceRule, memory: ResourceRule, window: duration}
      containerQuery, nodeQuery, resources, containerLabel
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "AdapterConfig",
    "DiscoveryRule",
    "GroupResourceRef",
    "LabelOverride",
    "NameMapping",
    "RegexFilter",
    "ResourceMapping",
    "ResourceRule",
    "ResourceRules",
]

_NO_LINES: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexFilter:
    """`seriesFilters[]` entry. Exactly one of the two must be set (checked when compiling)."""

    is_: str = ""
    """YAML `is`: keep series whose name matches (unanchored RE2 search)."""
    is_not: str = ""
    """YAML `isNot`: drop series whose name matches."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupResourceRef:
    """An override target as written: `{group: apps, resource: deployment}` (any form, any case)."""

    group: str = ""
    resource: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelOverride:
    """`resources.overrides.<label>`: this Prometheus label names objects of this resource."""

    label: str
    target: GroupResourceRef


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceMapping:
    """`resources`: how series labels map to Kubernetes group-resources and back."""

    template: str = ""
    """Go template (`<< >>`) with `.Group` (dots/dashes -> `_`) and `.Resource` (singular)."""
    overrides: tuple[LabelOverride, ...] = ()
    """Fixed label -> group-resource pairs, in file order; they win over the template."""
    namespaced: bool | None = None
    """External rules only: `false` stops adding the request's namespace as a matcher.
    None means absent (default true)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NameMapping:
    """`name`: series name -> API metric name."""

    matches: str = ""
    """RE2 regex searched in the series name; empty means `.*`. Also an implicit `is` filter."""
    as_: str = ""
    """YAML `as`: Go `regexp.Expand` template; empty means `$0` (no groups) or `$1` (one group)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryRule:
    """One entry of `rules` (custom metrics) or `externalRules` (external metrics)."""

    series_query: str = ""
    series_filters: tuple[RegexFilter, ...] = ()
    resources: ResourceMapping = field(default_factory=ResourceMapping)
    name: NameMapping = field(default_factory=NameMapping)
    metrics_query: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceRule:
    """`resourceRules.cpu` / `resourceRules.memory`."""

    container_query: str = ""
    """Template for pods; `.GroupBy` is `<podLabel>,<containerLabel>`."""
    node_query: str = ""
    """Template for nodes; `.GroupBy` is the node label."""
    resources: ResourceMapping = field(default_factory=ResourceMapping)
    """Must map namespaces, pods and nodes (by overrides or template)."""
    container_label: str = ""
    """Prometheus label holding the container name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceRules:
    """`resourceRules`: serves metrics.k8s.io when present."""

    cpu: ResourceRule = field(default_factory=ResourceRule)
    memory: ResourceRule = field(default_factory=ResourceRule)
    window: str = ""
    """Prometheus duration text as written (`5m`); only reported in PodMetrics/NodeMetrics."""
    window_seconds: float = 0.0
    """`window` parsed; 0 when absent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AdapterConfig:
    """The whole `--config` document."""

    rules: tuple[DiscoveryRule, ...] = ()
    external_rules: tuple[DiscoveryRule, ...] = ()
    resource_rules: ResourceRules | None = None
    source: str = "<string>"
    """File name used in every error message."""
    lines: Mapping[str, int] = field(default_factory=lambda: _NO_LINES, compare=False, repr=False)
    """1-based line of each field, keyed by path (`rules[3].name.matches`), for error messages."""

    def line_of(self, path: str) -> int | None:
        """Line of `path`, or of its nearest recorded parent."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return None
