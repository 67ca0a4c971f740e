"""The metric registry: an immutable snapshot of what the adapter exposes, built from series.

prometheus-adapter semantics (`series_registry.go`, `external_series_registry.go`):

* rules are applied in config order, series in Prometheus' answer order; each surviving series
  (its rule's `seriesFilters` + the implicit `name.matches` filter) yields one entry per resource
  its label names identify, keyed by (resource, metric, namespaced); a later series/rule with the
  same key overwrites the earlier one (the metric then queries whichever series name won);
* `namespaced` is false for namespaces, nodes and persistentvolumes and true for every other
  resource, whatever its real scope (upstream's discovery quirk, kept for compatibility);
* external metrics are keyed by metric name only.

Bounded memory: the registry never keeps label sets. Only a series' NAME and its label NAMES
decide what it contributes, so `SeriesDigest` folds any number of series into the distinct
(name, label names) shapes seen, and the registry keeps one entry per exposed metric.

Pure: no I/O, no clock (the caller passes `created_at`). Non-goals: querying, relisting.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar

from adapter.rules import query
from adapter.rules.compile import CompiledConfig, CompiledRule
from adapter.rules.resources import GroupResource, is_root_scoped_for_discovery

__all__ = [
    "CustomMetricEntry",
    "CustomMetricInfo",
    "ExternalMetricEntry",
    "ExternalMetricInfo",
    "Registry",
    "SeriesDigest",
    "build_registry",
    "build_registry_from_digests",
    "carry_over",
]

_NAME = "__name__"
_K = TypeVar("_K")
_E = TypeVar("_E")


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class CustomMetricInfo:
    """One `custom.metrics.k8s.io` resource entry: `<resource>/<metric>`."""

    resource: GroupResource
    metric: str
    namespaced: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomMetricEntry:
    rule: CompiledRule
    series_name: str


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class ExternalMetricInfo:
    metric: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalMetricEntry:
    rule: CompiledRule
    series_name: str


class SeriesDigest:
    """Distinct (series name, label names) shapes of one series answer, in first-seen order.

    Mutable accumulator (fed one series at a time while the answer streams in); freeze it with
    `shapes()`. Memory is O(distinct shapes), not O(series).
    """

    __slots__ = ("_raw", "count")

    def __init__(self) -> None:
        # (series name, label names in answer order): a cheap key for the hot path (one call
        # per series); folded into order-independent shapes by `shapes()`.
        self._raw: dict[tuple[str | None, tuple[str, ...]], None] = {}
        self.count = 0

    def add(self, labels: Mapping[str, str]) -> None:
        self.count += 1
        self._raw[(labels.get(_NAME), tuple(labels))] = None

    def shapes(self) -> tuple[tuple[str, frozenset[str]], ...]:
        interned: dict[frozenset[str], frozenset[str]] = {}
        shapes: dict[tuple[str, frozenset[str]], None] = {}
        for name, keys in self._raw:
            if not name:
                continue  # Prometheus always names series; ignore anything else
            names = frozenset(k for k in keys if k != _NAME)
            shapes[(name, interned.setdefault(names, names))] = None
        return tuple(shapes)

    @classmethod
    def of(cls, series: Iterable[Mapping[str, str]]) -> SeriesDigest:
        digest = cls()
        for labels in series:
            digest.add(labels)
        return digest


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Registry:
    """Immutable snapshot; lookups are dict reads. Build with `build_registry*`."""

    custom: Mapping[CustomMetricInfo, CustomMetricEntry] = field(
        default_factory=lambda: MappingProxyType({}))
    external: Mapping[str, ExternalMetricEntry] = field(
        default_factory=lambda: MappingProxyType({}))
    created_at: float = 0.0
    """Clock time of the relist that built it (0.0 for the empty registry before any relist)."""
    series_count: int = 0
    """Series Prometheus returned for all series queries of that relist."""
    series_by_query: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    unpastable_series: tuple[str, ...] = ()
    """Series names left out because a rule would paste them as `<<.Series>>` and they are no
    classic metric names (`query.pastable_series_name`): listed, they could only answer errors."""
    rules: CompiledConfig | None = None
    """The rules that built it (None for the empty registry before any relist)."""
    missing_custom: frozenset[CustomMetricInfo] = frozenset()
    missing_external: frozenset[str] = frozenset()
    """Entries served although the relist that built this snapshot did not find them (missing
    once: a scrape gap, a restart on fresh storage); the next relist that misses them drops them."""
    dropped_custom: Mapping[CustomMetricInfo, CustomMetricEntry] = field(
        default_factory=lambda: MappingProxyType({}))
    dropped_external: Mapping[str, ExternalMetricEntry] = field(
        default_factory=lambda: MappingProxyType({}))
    """Entries the relist that built this snapshot dropped (missing from two relists in a row):
    a request for one re-checks Prometheus (`adapter.discovery.recheck`)."""
    _custom_sorted: tuple[CustomMetricInfo, ...] = field(init=False, repr=False)
    _external_sorted: tuple[ExternalMetricInfo, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_custom_sorted", tuple(sorted(self.custom)))
        object.__setattr__(self, "_external_sorted",
                           tuple(ExternalMetricInfo(metric=m) for m in sorted(self.external)))

    @classmethod
    def empty(cls) -> Registry:
        return cls()

    def custom_metrics(self) -> tuple[CustomMetricInfo, ...]:
        return self._custom_sorted

    def external_metrics(self) -> tuple[ExternalMetricInfo, ...]:
        return self._external_sorted

    def lookup_custom(
        self, resource: GroupResource, metric: str, *, namespaced: bool
    ) -> CustomMetricEntry | None:
        key = CustomMetricInfo(resource=resource, metric=metric, namespaced=namespaced)
        return self.custom.get(key)

    def lookup_external(self, metric: str) -> ExternalMetricEntry | None:
        return self.external.get(metric)

    def __len__(self) -> int:
        return len(self.custom) + len(self.external)

    def restored(self, info: CustomMetricInfo | str,
                 entry: CustomMetricEntry | ExternalMetricEntry) -> Registry:
        """A copy that serves `entry` again (a re-check found a dropped metric in Prometheus)."""
        custom, external = dict(self.custom), dict(self.external)
        dropped_custom, dropped_external = dict(self.dropped_custom), dict(self.dropped_external)
        if isinstance(info, CustomMetricInfo) and isinstance(entry, CustomMetricEntry):
            custom[info] = entry
            dropped_custom.pop(info, None)
        elif isinstance(info, str) and isinstance(entry, ExternalMetricEntry):
            external[info] = entry
            dropped_external.pop(info, None)
        return replace(self, custom=MappingProxyType(custom), external=MappingProxyType(external),
                       dropped_custom=MappingProxyType(dropped_custom),
                       dropped_external=MappingProxyType(dropped_external))


def carry_over(previous: Registry, fresh: Registry) -> Registry:
    """`fresh` plus the entries of `previous` it misses for the first time (they stay served,
    marked missing); entries missing a second time in a row are dropped (kept aside in
    `dropped_*` for a re-check). Only between snapshots of the same rules: `fresh` as it is when
    the rules changed (a reload starts a fresh registry)."""
    if previous.rules is not fresh.rules:
        return fresh
    custom, missing_custom, dropped_custom = _carry(previous.custom, previous.missing_custom, fresh.custom)
    external, missing_external, dropped_external = _carry(
        previous.external, previous.missing_external, fresh.external)
    return replace(fresh, custom=MappingProxyType(custom), external=MappingProxyType(external),
                   missing_custom=frozenset(missing_custom), missing_external=frozenset(missing_external),
                   dropped_custom=MappingProxyType(dropped_custom),
                   dropped_external=MappingProxyType(dropped_external))


def _carry(previous: Mapping[_K, _E], previously_missing: frozenset[_K],
           fresh: Mapping[_K, _E]) -> tuple[dict[_K, _E], set[_K], dict[_K, _E]]:
    served, missing, dropped = dict(fresh), set(), {}
    for key, entry in previous.items():
        if key in fresh:
            continue
        if key in previously_missing:
            dropped[key] = entry
        else:
            served[key] = entry
            missing.add(key)
    return served, missing, dropped


def build_registry(
    compiled: CompiledConfig,
    series_by_query: Mapping[str, Sequence[Mapping[str, str]]],
    *,
    created_at: float = 0.0,
) -> Registry:
    """Registry from full series answers keyed by seriesQuery (small inputs, tests)."""
    digests = {query: SeriesDigest.of(series) for query, series in series_by_query.items()}
    return build_registry_from_digests(compiled, digests, created_at=created_at)


def build_registry_from_digests(
    compiled: CompiledConfig, digests: Mapping[str, SeriesDigest], *, created_at: float = 0.0
) -> Registry:
    """Registry from per-seriesQuery digests (what the relist streams into)."""
    custom: dict[CustomMetricInfo, CustomMetricEntry] = {}
    unpastable: set[str] = set()
    for rule in compiled.custom:
        for name, labels in _servable(rule, digests.get(rule.series_query), unpastable):
            _add_custom(custom, rule, name, labels)
    external: dict[str, ExternalMetricEntry] = {}
    for rule in compiled.external:
        for name, _labels in _servable(rule, digests.get(rule.series_query), unpastable):
            metric = rule.metric_name(name)
            if metric is not None:
                external[metric] = ExternalMetricEntry(rule=rule, series_name=name)
    return Registry(
        custom=MappingProxyType(custom),
        external=MappingProxyType(external),
        created_at=created_at,
        unpastable_series=tuple(sorted(unpastable)),
        series_count=sum(d.count for d in digests.values()),
        series_by_query=MappingProxyType({q: d.count for q, d in digests.items()}),
        rules=compiled,
    )


def _add_custom(
    out: dict[CustomMetricInfo, CustomMetricEntry],
    rule: CompiledRule,
    series_name: str,
    label_names: frozenset[str],
) -> None:
    metric = rule.metric_name(series_name)
    if metric is None:
        return
    # Sorted label order keeps the result independent of set iteration order.
    for resource in rule.resources_for(sorted(label_names)):
        info = CustomMetricInfo(resource=resource, metric=metric,
                                namespaced=not is_root_scoped_for_discovery(resource))
        out[info] = CustomMetricEntry(rule=rule, series_name=series_name)


def _servable(rule: CompiledRule, digest: SeriesDigest | None,
              unpastable: set[str]) -> Iterator[tuple[str, frozenset[str]]]:
    """The series shapes of `rule`'s seriesQuery it can serve; the names it would paste into its
    query and cannot go to `unpastable`."""
    pastes = rule.query_template.references("Series")
    for name, labels in digest.shapes() if digest is not None else ():
        if pastes and not query.pastable_series_name(name):
            unpastable.add(name)
        else:
            yield name, labels
