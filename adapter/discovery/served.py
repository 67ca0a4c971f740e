"""Start-up check that every resource a rule's `resources.overrides` names is served by the
cluster, as prometheus-adapter's RESTMapper check refuses such a rule file at start.

An override naming a resource the cluster does not serve (a CRD not installed, a typo) would
otherwise map its label to objects nobody can list: every request for it would fail later, one by
one. Upstream refuses to start with "unable to construct naming scheme from metrics rules: unable
to normalize group-resource {<group> <resource>}: no matches for ..."; so do we, naming the rule.

Non-goals: resolving resources (kubecommon.kube.resources.ResourceResolver answers through API
discovery), retrying an unreachable API server (that is not a verdict on the rule file: the check
gives way and the request path reports it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from adapter.rules.compile import CompiledConfig
from adapter.rules.resources import GroupResource, LabelMapper
from kubecommon.kube.errors import UnknownResource

__all__ = ["OverrideNotServed", "check_overrides_served"]

Resolve = Callable[[str, str], Awaitable[Any]]


class OverrideNotServed(Exception):
    """A rule's override names a resource the cluster does not serve."""

    def __init__(self, *, location: str, series_query: str, label: str, target: GroupResource) -> None:
        group, resource = target.group, target.resource
        super().__init__(
            "unable to construct naming scheme from metrics rules: unable to normalize group-resource "
            f"{{{group} {resource}}}: no matches for {group}/, Resource={resource} "
            f"({location}: override of label {label!r}, series query {series_query!r})")
        self.target = target


def _overrides(compiled: CompiledConfig) -> Iterator[tuple[str, str, LabelMapper]]:
    for rule in (*compiled.custom, *compiled.external):
        yield rule.ref.location, rule.series_query, rule.mapper
    if compiled.resource is not None:
        for query in (compiled.resource.cpu, compiled.resource.memory):
            yield query.ref.location, "", query.mapper


async def check_overrides_served(compiled: CompiledConfig, resolve: Resolve) -> None:
    """Raise OverrideNotServed for the first override whose resource discovery does not know."""
    for location, series_query, mapper in _overrides(compiled):
        for label, target in sorted(mapper.overrides.items()):
            try:
                await resolve(target.group, target.resource)
            except UnknownResource:
                raise OverrideNotServed(location=location, series_query=series_query, label=label,
                                        target=target) from None
