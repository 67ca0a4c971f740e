"""Aggregated discovery (apidiscovery.k8s.io/v2 and v2beta1 `APIGroupDiscoveryList`).

kubectl and client-go ask `/api` and `/apis` for this document first and need no per-group
requests when they get it. Local group-versions are described from the resource types; remote
(aggregated) ones from what the aggregator fetched from the backend, converted from a legacy
`APIResourceList` with kube-apiserver's rules: `parent/sub` entries become subresources of
`parent` (a parent the list does not name gets an empty responseKind), and a parent and its
subresources with different scopes make the whole group-version unusable
(aggregated-apiserver.md §3.2-3.3). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .resources import ResourceType

_MEDIA = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"


class ScopeMismatch(ValueError):
    pass


def negotiate(accept: str) -> str | None:
    """The discovery version ("v2" or "v2beta1") the client prefers, or None for legacy JSON."""
    for media in accept.split(","):
        base, *params = [p.strip() for p in media.split(";")]
        values = dict(p.split("=", 1) for p in params if "=" in p)
        if base.lower() == "application/json" and values.get("g") == "apidiscovery.k8s.io" \
                and values.get("as") == "APIGroupDiscoveryList" and values.get("v") in ("v2", "v2beta1"):
            return values["v"]
        if base.lower() in ("application/json", "*/*", "application/*") and not values:
            return None
    return None


def content_type(version: str) -> str:
    return _MEDIA.format(v=version)


def _scope(namespaced: bool) -> str:
    return "Namespaced" if namespaced else "Cluster"


def local_resources(types: Iterable[ResourceType]) -> list[dict[str, Any]]:
    out = []
    rw = ["get", "patch", "update"]
    for rt in sorted(types, key=lambda t: t.plural):
        entry: dict[str, Any] = {
            "resource": rt.plural, "scope": _scope(rt.namespaced), "singularResource": rt.singular,
            "verbs": list(rt.verbs),
            "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind}}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        subs = []
        if rt.status:
            subs.append({"subresource": "status", "verbs": rw, "responseKind": {
                "group": rt.group, "version": rt.version, "kind": rt.kind}})
        if rt.scale is not None:
            subs.append({"subresource": "scale", "verbs": rw, "responseKind": {
                "group": "autoscaling", "version": "v1", "kind": "Scale"}})
        for sub, kind, verbs in rt.extra_subresources:
            subs.append({"subresource": sub, "verbs": list(verbs), "responseKind": {
                "group": "authentication.k8s.io", "version": "v1", "kind": kind}})
        if subs:
            entry["subresources"] = subs
        out.append(entry)
    return out


def from_legacy(resource_list: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Convert an APIResourceList; raises ScopeMismatch like kube-apiserver's converter."""
    gv = str(resource_list.get("groupVersion", ""))
    group, _, version = gv.rpartition("/")
    parents: dict[str, dict[str, Any]] = {}
    for r in resource_list.get("resources") or []:
        name = str(r.get("name", ""))
        parent_name, _, sub = name.partition("/")
        kind = {"group": r.get("group") or group, "version": r.get("version") or version,
                "kind": r.get("kind", "")}
        scope = _scope(bool(r.get("namespaced")))
        parent = parents.get(parent_name)
        if not sub:
            entry = {"resource": name, "responseKind": kind, "scope": scope,
                     "singularResource": r.get("singularName", ""), "verbs": list(r.get("verbs") or [])}
            for key in ("shortNames", "categories"):
                if r.get(key):
                    entry[key] = list(r[key])
            if parent is not None:  # a subresource came first and made a placeholder
                _same_scope(parent, scope, name)
                entry["subresources"] = parent.get("subresources", [])
            parents[name] = entry
            continue
        if parent is None:
            parent = parents[parent_name] = {
                "resource": parent_name, "responseKind": {"group": "", "version": "", "kind": ""},
                "scope": scope, "singularResource": "", "verbs": []}
        _same_scope(parent, scope, name)
        parent.setdefault("subresources", []).append(
            {"subresource": sub, "responseKind": kind, "verbs": list(r.get("verbs") or [])})
    return list(parents.values())


def _same_scope(parent: Mapping[str, Any], scope: str, name: str) -> None:
    if parent["scope"] != scope:
        raise ScopeMismatch(f"Parent {parent['resource']} (scope: {parent['scope']}) and "
                            f"subresource {name} (scope: {scope}) scope do not match")


def group_item(name: str, versions: list[tuple[str, list[dict[str, Any]] | None]]) -> dict[str, Any]:
    """One APIGroupDiscovery; a version with resources None is published Stale."""
    return {"metadata": {"name": name, "creationTimestamp": None} if name else {"creationTimestamp": None},
            "versions": [{"version": v, "resources": resources or [],
                          "freshness": "Current" if resources is not None else "Stale"}
                         for v, resources in versions]}


def document(version: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}
