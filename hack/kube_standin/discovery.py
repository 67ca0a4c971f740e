"""Legacy discovery documents: /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>.

As in kube-apiserver with its aggregator, `/apis` and `/apis/<group>` are built from the
APIService objects (local built-in groups, CRD groups and remote aggregated groups alike),
ordered by groupPriorityMinimum and versionPriority with Kubernetes version ordering
(aggregated-apiserver.md §3.1, §4.5). Local group-versions list their resources and
subresources. Aggregated discovery (v2) lives in `discovery_v2`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from .resources import ResourceType

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_sort_key(version: str) -> tuple[int, int, int, str]:
    """Sorts GA > beta > alpha, higher numbers first; non-Kubernetes-like versions last."""
    m = _KUBE_VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    level = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (level, -int(m.group(1)), -int(m.group(3) or 0), "")


def _gv(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}" if group else version, "version": version}


def group_entries(apiservices: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """APIGroup entries (without kind/apiVersion) for every non-core group, in priority order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for svc in apiservices:
        spec = svc.get("spec") or {}
        if spec.get("group"):
            groups.setdefault(spec["group"], []).append(svc)

    def group_key(item: tuple[str, list[Mapping[str, Any]]]) -> tuple[int, str]:
        name, members = item
        if name == "apiregistration.k8s.io":
            return (-(10 ** 9), "")
        top = max(int((m.get("spec") or {}).get("groupPriorityMinimum") or 0) for m in members)
        return (-top, min(m["metadata"]["name"] for m in members))

    out = []
    for name, members in sorted(groups.items(), key=group_key):
        members = sorted(members, key=lambda m: (-int((m.get("spec") or {}).get("versionPriority") or 0),
                                                 version_sort_key(m["spec"]["version"])))
        versions = [_gv(name, m["spec"]["version"]) for m in members]
        out.append({"name": name, "versions": versions, "preferredVersion": versions[0]})
    return out


def api_group_list(apiservices: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": group_entries(apiservices)}


def api_group(apiservices: Iterable[Mapping[str, Any]], group: str) -> dict[str, Any] | None:
    for entry in group_entries(apiservices):
        if entry["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **entry}
    return None


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def resource_entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular,
                            "namespaced": rt.namespaced, "kind": rt.kind, "verbs": list(rt.verbs)}
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    out = [main]
    rw = ["get", "patch", "update"]
    if rt.status:
        out.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                    "kind": rt.kind, "verbs": rw})
    if rt.scale is not None:
        out.append({"name": f"{rt.plural}/scale", "singularName": "", "namespaced": rt.namespaced,
                    "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": rw})
    for sub, kind, verbs in rt.extra_subresources:
        out.append({"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                    "group": "authentication.k8s.io", "version": "v1", "kind": kind,
                    "verbs": list(verbs)})
    return out


def api_resource_list(group: str, version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rt in sorted(types, key=lambda t: t.plural):
        resources.extend(resource_entries(rt))
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}
