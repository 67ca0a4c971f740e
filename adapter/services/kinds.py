"""Kind and apiVersion of the objects custom metrics describe (`describedObject`), and the
normalisation of the resource a request path names.

prometheus-adapter asks its RESTMapper; we use the rules' static `ResourceTable` (the same one the
rule compiler normalises with), and derive a best-effort Kind for anything else (`foos.example.com`
→ `Foo`, `example.com/v1`). The HPA ignores both fields; humans read them.

Upstream quirk kept for wire compatibility: core objects get apiVersion `"/v1"` (custom-metrics-apiserver
joins group and version with a slash even when the group is empty).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapter.rules.resources import DEFAULT_TABLE, GroupResource, ResourceTable

__all__ = ["KindInfo", "kind_for", "normalize_resource", "upstream_api_version"]

# The served (preferred) version of the groups in the table; anything else is assumed v1.
_GROUP_VERSIONS = {"autoscaling": "v2"}


@dataclass(frozen=True, slots=True, kw_only=True)
class KindInfo:
    kind: str
    api_version: str


def normalize_resource(text: str, table: ResourceTable = DEFAULT_TABLE) -> GroupResource:
    """`pod`, `Pods`, `deployments.apps`, `deploy.apps` → the plural lower-case group-resource."""
    parsed = GroupResource.parse(text)
    return table.normalize_or_pass(parsed.group, parsed.resource)


def _singular(resource: str) -> str:
    if resource.endswith("ies"):
        return resource[:-3] + "y"
    if resource.endswith(("sses", "xes", "ches", "shes")):
        return resource[:-2]
    if resource.endswith("s") and not resource.endswith("ss"):
        return resource[:-1]
    return resource


def kind_for(resource: GroupResource, table: ResourceTable = DEFAULT_TABLE) -> KindInfo:
    """The Kind and the upstream-style apiVersion (`group/version`, `/v1` for core)."""
    known = table.lookup(resource.group, resource.resource)
    if known is not None and known.group == resource.group:
        kind = known.kind
    else:
        singular = _singular(resource.resource)
        kind = singular[:1].upper() + singular[1:]
    version = _GROUP_VERSIONS.get(resource.group, "v1")
    return KindInfo(kind=kind, api_version=f"{resource.group}/{version}")


def upstream_api_version(api_version: str) -> str:
    """`v1` → `/v1` (core), `apps/v1` unchanged: the form custom-metrics-apiserver emits."""
    return api_version if "/" in api_version else f"/{api_version}"
