"""Resolve a group/resource to the API path, version, kind and scope the API server serves.

Job: what a RESTMapper does for us, from the API server's own discovery documents
(`/apis/<group>` for the preferred version, then `/apis/<group>/<version>`; `/api/v1` for the
core group), cached per process. Core resources the adapter always needs are known statically so
that pods and nodes never wait for discovery. Unknown resources are remembered for a short time
so that a flood of requests for a bogus resource does not become a flood of discovery calls.

Kind mapping (`resolve_kind`, `kind_mappings`) is client-go's RESTMapper for scale targets: a
(group, kind) is looked up in every version the group serves (the asked version first, then the
preferred one, then the rest), discovery is re-read once on a miss (misses are then remembered
for 30 s, so a CRD created later becomes resolvable within that time) and `forget_kind` drops a
mapping the caller found stale (a 404 on its path). `ResourceInfo.scalable` says whether
discovery lists a `scale` subresource for the resource.

Non-goals: subresources other than noting `scale`, short names of CRDs beyond what discovery
lists, version choice for `resolve` other than the group's preferred version.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, UnknownKind, UnknownResource
from kubecommon.kube.ttlcache import TTLCache

__all__ = ["ResourceInfo", "ResourceResolver", "split_api_version"]

_NEGATIVE_TTL_SECONDS = 30.0
_VERSION = re.compile(r"^v[0-9]+((alpha|beta)[0-9]+)?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceInfo:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    scalable: bool = False  # discovery lists `<resource>/scale`

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{prefix}/namespaces/{namespace}/{self.resource}"
        return f"{prefix}/{self.resource}"


def split_api_version(api_version: str, kind: str = "") -> tuple[str, str]:
    """"apps/v1" -> ("apps", "v1"); "v1" -> ("", "v1"). A bare group ("apps") or an empty
    value raises `UnknownKind`, because it names no version and "apps" is no core version."""
    group, slash, version = api_version.strip().rpartition("/")
    if not version or (slash and not group) or (not slash and not _VERSION.match(version)):
        raise UnknownKind(group or version, kind, detail=(
            f"invalid apiVersion {api_version!r} for kind {kind!r}: want <group>/<version> or a core version like v1"))
    return group, version


_STATIC = {
    ("", "pods"): ResourceInfo(group="", version="v1", resource="pods", kind="Pod", namespaced=True),
    ("", "nodes"): ResourceInfo(group="", version="v1", resource="nodes", kind="Node", namespaced=False),
    ("", "namespaces"): ResourceInfo(group="", version="v1", resource="namespaces", kind="Namespace",
                                     namespaced=False),
    ("", "configmaps"): ResourceInfo(group="", version="v1", resource="configmaps", kind="ConfigMap",
                                     namespaced=True),
}


class ResourceResolver:
    def __init__(self, client: KubeClient, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._clock = clock
        self._known: dict[tuple[str, str], ResourceInfo] = dict(_STATIC)
        self._unknown: TTLCache[tuple[str, str], bool] = TTLCache(1024)  # bounded: names come from requests
        self._kinds: dict[tuple[str, str], tuple[ResourceInfo, ...]] = {}  # (group, kind) -> preferred first
        self._unknown_kinds: TTLCache[tuple[str, str], bool] = TTLCache(1024)
        self._lock = asyncio.Lock()

    async def resolve(self, group: str, resource: str) -> ResourceInfo:
        key = (group, resource)
        if key in self._known:
            return self._known[key]
        if self._unknown.get(key, now=self._clock()):
            raise UnknownResource(group, resource)
        async with self._lock:  # one discovery round at a time; results are shared
            if key in self._known:
                return self._known[key]
            await self._discover(group)
        if key in self._known:
            return self._known[key]
        self._unknown.put(key, True, expires_at=self._clock() + _NEGATIVE_TTL_SECONDS)
        raise UnknownResource(group, resource)

    async def resolve_kind(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource serving `kind` in `api_version`'s group: that version when it serves the
        kind, else the group's preferred one among those that do. Raises `UnknownKind`."""
        group, version = split_api_version(api_version, kind)
        mappings = await self.kind_mappings(group, kind)
        return next((info for info in mappings if info.version == version), mappings[0])

    async def kind_mappings(self, group: str, kind: str) -> tuple[ResourceInfo, ...]:
        """Every version's resource for (group, kind), the preferred version first."""
        key = (group, kind)
        found = self._kinds.get(key)
        if found:
            return found
        if self._unknown_kinds.get(key, now=self._clock()):
            raise UnknownKind(group, kind)
        async with self._lock:
            if key not in self._kinds:
                await self._discover_kinds(group)
        found = self._kinds.get(key)
        if not found:
            self._unknown_kinds.put(key, True, expires_at=self._clock() + _NEGATIVE_TTL_SECONDS)
            raise UnknownKind(group, kind)
        return found

    def forget_kind(self, group: str, kind: str) -> None:
        """Drop a mapping the caller found stale (e.g. 404 on its path): the next call re-discovers."""
        self._kinds.pop((group, kind), None)

    async def _discover_kinds(self, group: str) -> None:
        versions = await self._group_versions(group)
        found: dict[str, list[ResourceInfo]] = {}
        for version in versions:
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                listing = await self._client.get(path)
            except KubeAPIError as err:
                if err.code == 404:
                    continue
                raise
            for info in _listing_infos(group, version, listing):
                found.setdefault(info.kind, []).append(info)
        for key in [key for key in self._kinds if key[0] == group]:
            del self._kinds[key]
        for kind, infos in found.items():
            self._kinds[(group, kind)] = tuple(infos)

    async def _group_versions(self, group: str) -> list[str]:
        """The group's versions, preferred first ([] when the group is not served)."""
        if not group:
            return ["v1"]
        try:
            doc = await self._client.get(f"/apis/{group}")
        except KubeAPIError as err:
            if err.code == 404:
                return []
            raise
        listed = [str(entry.get("version") or "") for entry in doc.get("versions") or ()]
        preferred = str((doc.get("preferredVersion") or {}).get("version") or "")
        ordered = [preferred] if preferred else []
        return ordered + [version for version in listed if version and version != preferred]

    async def _discover(self, group: str) -> None:
        try:
            if group:
                doc = await self._client.get(f"/apis/{group}")
                version = str((doc.get("preferredVersion") or {}).get("version") or "")
                if not version:
                    versions = doc.get("versions") or []
                    version = str(versions[0].get("version")) if versions else ""
                if not version:
                    return
                listing = await self._client.get(f"/apis/{group}/{version}")
            else:
                version = "v1"
                listing = await self._client.get("/api/v1")
        except KubeAPIError as err:
            if err.code == 404:
                return
            raise
        self._remember(group, version, listing)

    def _remember(self, group: str, version: str, listing: dict[str, Any]) -> None:
        entries = {str(entry.get("name") or ""): entry for entry in listing.get("resources") or ()}
        for info in _listing_infos(group, version, listing):
            self._known.setdefault((group, info.resource), info)
            entry = entries[info.resource]
            for alias in (entry.get("singularName"), *(entry.get("shortNames") or ())):
                if alias:
                    self._known.setdefault((group, str(alias)), info)


def _listing_infos(group: str, version: str, listing: dict[str, Any]) -> list[ResourceInfo]:
    """The top-level resources of one APIResourceList, each marked scalable when `<name>/scale` is listed."""
    entries = [entry for entry in listing.get("resources") or () if isinstance(entry, dict)]
    names = {str(entry.get("name") or "") for entry in entries}
    return [ResourceInfo(group=group, version=version, resource=name, kind=str(entry.get("kind") or ""),
                         namespaced=bool(entry.get("namespaced")), scalable=f"{name}/scale" in names)
            for entry in entries
            if (name := str(entry.get("name") or "")) and "/" not in name]
