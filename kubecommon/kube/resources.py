"""Resolve a group/resource to the API path, version, kind and scope the API server serves.

Job: what a RESTMapper does for us, from the API server's own discovery documents
(`/apis/<group>` for the preferred version, then `/apis/<group>/<version>`; `/api/v1` for the
core group), cached per process. Core resources the adapter always needs are known statically so
that pods and nodes never wait for discovery. Unknown resources are remembered for a short time
so that a flood of requests for a bogus resource does not become a flood of discovery calls.

Non-goals: subresources, short names of CRDs beyond what discovery lists, version choice other
than the group's preferred version.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, UnknownResource
from kubecommon.kube.ttlcache import TTLCache

__all__ = ["ResourceInfo", "ResourceResolver"]

_NEGATIVE_TTL_SECONDS = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceInfo:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{prefix}/namespaces/{namespace}/{self.resource}"
        return f"{prefix}/{self.resource}"


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
        for entry in listing.get("resources") or ():
            name = str(entry.get("name") or "")
            if not name or "/" in name:
                continue
            info = ResourceInfo(group=group, version=version, resource=name,
                                kind=str(entry.get("kind") or ""), namespaced=bool(entry.get("namespaced")))
            self._known.setdefault((group, name), info)
            for alias in (entry.get("singularName"), *(entry.get("shortNames") or ())):
                if alias:
                    self._known.setdefault((group, str(alias)), info)
