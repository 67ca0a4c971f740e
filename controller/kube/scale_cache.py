"""`CachedScaleClient`: the target's scale read from a watch cache, `/scale` written as before.

Job (ports.ScaleClient): at 10,000 autoscalers a GET of `/scale` per sync costs more CPU than the
rest of the sync. Reads are answered from a list-then-watch cache (`ObjectCache`) of the target's
resource, with the Scale derived as the API server derives it (`controller.kube.scale_derive`):
the built-in workloads (apps/v1 Deployments, StatefulSets, ReplicaSets; core
ReplicationControllers), whose cache keeps only the Scale derived as each version arrives (not
the object: a Deployment's pod template is most of it), and custom resources whose CRD (watched
too, kept as its versions' scale subresources only) declares a scale subresource for the served
version, whose cache keeps the objects without metadata beyond their identity. Everything else
goes to `KubeScaleClient` (GET `/scale`), and so does every read the cache cannot answer: cache
not synced yet, object not in it (just created, or in a namespace not watched), or an object the
API server would refuse to derive (it then reports the error itself). So a miss never becomes FailedGetScale.

* Caches start lazily, one per (group, resource) on the first read of a target of that kind,
  shared by all autoscalers; they are kept until `stop()` (controller shutdown): the kinds a
  cluster scales are few, and stopping a cache when its last autoscaler goes would relist the
  whole kind the next time one comes back. Custom kinds get a cache only once their CRD says
  they have a scale subresource (an aggregated API's kind never gets one).
* A list refused with 401/403 (RBAC without list/watch on the kind, or on CRDs) turns the cache
  off for that kind: reads go to GET `/scale`, logged once, until restart. 404 likewise.
* Writes: PUT `/scale` with the read resourceVersion through `KubeScaleClient` (409: re-read with
  a real GET and retry). The Scale a write returns supersedes the cached object until the watch
  delivers that resourceVersion or a later one (integer resourceVersions, as etcd gives; an opaque
  one waits for equality), or `written_ttl` passes: the next sync must not act on the replica
  count from before its own write.

Non-goals: stale-watch detection beyond `ObjectCache`'s own (a stale read can only cost a 409
and a fresh GET on write), deciding anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.kube.ports import ScaleClient, ScaleInfo, TargetRef
from controller.kube.scale import KubeScaleClient
from controller.kube.scale_derive import (
    BUILTIN_SCALABLE, CustomScalePaths, custom_scale_paths, scale_from_custom, scale_from_workload,
)
from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.compact import compact, strip_metadata
from kubecommon.kube.errors import KubeAPIError, KubeError
from kubecommon.kube.objects import KubeObject
from kubecommon.kube.resources import ResourceInfo

__all__ = ["CRDS", "CachedScaleClient"]

_log = logging.getLogger(__name__)
CRDS = ResourceInfo(group="apiextensions.k8s.io", version="v1", resource="customresourcedefinitions",
                    kind="CustomResourceDefinition", namespaced=False)
_REFUSED = (401, 403, 404)  # waiting will not help: RBAC, or the resource is not served
_WRITTEN_TTL_SECONDS = 30.0

_Key = tuple[str, str]  # (group, resource)
_ObjectKey = tuple[str, str, str, str]  # (group, resource, namespace, name)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Written:
    scale: ScaleInfo
    at: float


def _not_older(cached: str, written: str) -> bool:
    """Whether the cached resourceVersion is the written one or later (integers only)."""
    if cached == written:
        return True
    if cached.isdigit() and written.isdigit():
        return int(cached) >= int(written)
    return False


class CachedScaleClient:
    def __init__(self, direct: KubeScaleClient, client: KubeClient, *, namespace: str | None = None,
                 clock: Callable[[], float] = time.monotonic, written_ttl: float = _WRITTEN_TTL_SECONDS,
                 watch_timeout_seconds: int = 300) -> None:
        self._direct = direct
        self._client = client
        self._namespace = namespace
        self._clock = clock
        self._written_ttl = written_ttl
        self._watch_timeout = watch_timeout_seconds
        self._caches: dict[_Key, ObjectCache] = {}
        self._crds: ObjectCache | None = None
        self._off: set[_Key] = set()  # kinds whose list was refused: GET /scale for good
        self._written: dict[_ObjectKey, _Written] = {}
        self.reads_cached = 0  # reads answered from a watch cache (self-metrics, tests)
        self.reads_direct = 0  # reads that went to GET /scale

    @property
    def conflicts_retried(self) -> int:
        return self._direct.conflicts_retried

    def cached_kinds(self) -> list[str]:
        """The watched target kinds as `resource.group`, sorted (debugging, tests)."""
        return sorted(f"{r}.{g}" if g else r for g, r in self._caches)

    async def get(self, namespace: str, ref: TargetRef) -> ScaleInfo:
        try:
            info = await self._direct.mapping(ref)
        except KubeError:
            info = None  # let the direct read raise the error the user should see
        scale = await self._cached(info, namespace, ref.name) if info is not None else None
        if scale is not None:
            self.reads_cached += 1
            return scale
        self.reads_direct += 1
        return await self._direct.get(namespace, ref)

    async def update(self, namespace: str, ref: TargetRef, replicas: int, scale: ScaleInfo) -> ScaleInfo:
        written = await self._direct.update(namespace, ref, replicas, scale)
        info = await self._direct.mapping(ref)
        now = self._clock()
        for key in [k for k, w in self._written.items() if now - w.at > self._written_ttl]:
            del self._written[key]
        self._written[(info.group, info.resource, namespace, ref.name)] = _Written(scale=written, at=now)
        return written

    async def stop(self) -> None:
        for cache in (*self._caches.values(), *((self._crds,) if self._crds is not None else ())):
            await cache.stop()
        self._caches.clear()
        self._crds = None

    # --- reads from the caches ---------------------------------------------------------------
    async def _cached(self, info: ResourceInfo, namespace: str, name: str) -> ScaleInfo | None:
        key = (info.group, info.resource)
        if key in self._off:
            return None
        derive = await self._derivation(info)
        if derive is None:
            return None
        cache = await self._cache(key, info)
        if not await self._usable(cache, key):
            return None
        obj = cache.get(namespace, name)
        derived = self._derive(derive, obj)
        if derived is None:
            self._written.pop((*key, namespace, name), None)  # the GET that follows is fresh
            return None
        return self._fresher((*key, namespace, name), derived)

    @staticmethod
    def _derive(derive: Callable[[Mapping[str, Any]], ScaleInfo | None], obj: KubeObject | None) -> ScaleInfo | None:
        """A built-in workload's Scale as derived when the cache took the object in; a custom
        resource's derived now (its scale paths may change with its CRD)."""
        if obj is None:
            return None
        if isinstance(obj.value, ScaleInfo):
            return obj.value
        return derive(obj.raw) if obj.raw is not None else None

    async def _derivation(self, info: ResourceInfo) -> Callable[[Mapping[str, Any]], ScaleInfo | None] | None:
        """How to turn an object of `info` into its Scale; None: ask the API server."""
        if (info.group, info.resource) in BUILTIN_SCALABLE:
            return lambda obj: scale_from_workload(obj, info.resource)
        paths = await self._custom_paths(info) if "." in info.group else None
        if paths is None:
            return None
        found: CustomScalePaths = paths
        return lambda obj: scale_from_custom(obj, found)

    async def _custom_paths(self, info: ResourceInfo) -> CustomScalePaths | None:
        key = (CRDS.group, CRDS.resource)
        if key in self._off:
            return None
        if self._crds is None:
            self._crds = self._new_cache(CRDS, namespace=None)
        if not await self._usable(self._crds, key):
            return None
        crd = self._crds.get(None, f"{info.resource}.{info.group}")
        if crd is None or crd.raw is None:
            return None
        return custom_scale_paths(crd.raw, info.version)

    async def _cache(self, key: _Key, info: ResourceInfo) -> ObjectCache:
        cache = self._caches.get(key)
        if cache is None or cache.info.version != info.version:
            if cache is not None:  # the preferred version moved
                _log.info("scale reads of %s now watch version %s", info.resource, info.version)
                await cache.stop()
            cache = self._caches[key] = self._new_cache(info, namespace=self._namespace)
        return cache

    def _new_cache(self, info: ResourceInfo, *, namespace: str | None) -> ObjectCache:
        if (info.group, info.resource) in BUILTIN_SCALABLE:
            resource = info.resource
            cache = ObjectCache(self._client, info, namespace=namespace, watch_timeout_seconds=self._watch_timeout,
                                convert=lambda obj: scale_from_workload(obj, resource), keep_labels=False)
        else:
            cache = ObjectCache(self._client, info, namespace=namespace, keep_raw=True,
                                strip=_scale_part if info == CRDS else strip_metadata, keep_labels=False,
                                watch_timeout_seconds=self._watch_timeout)
        cache.start()
        _log.info("scale reads of %s: watching %s (until synced, GET /scale)", info.kind, info.resource)
        return cache

    async def _usable(self, cache: ObjectCache, key: _Key) -> bool:
        if cache.synced:
            return True
        err = cache.last_error
        if isinstance(err, KubeAPIError) and err.code in _REFUSED:
            self._off.add(key)
            _log.warning("cannot list/watch %s (%s): reading its scale with GET /scale per sync instead; "
                         "grant list and watch on it to save those requests", cache.info.resource, err)
            await cache.stop()
        return False

    def _fresher(self, key: _ObjectKey, derived: ScaleInfo) -> ScaleInfo:
        """The cached Scale, unless our own write is newer than what the watch has delivered."""
        written = self._written.get(key)
        if written is None:
            return derived
        if _not_older(derived.resource_version, written.scale.resource_version) \
                or self._clock() - written.at > self._written_ttl:
            del self._written[key]
            return derived
        return written.scale


def _scale_part(crd: Mapping[str, Any]) -> dict[str, Any]:
    """What `custom_scale_paths` reads of a CRD: each version's name and scale subresource (a
    CRD's schemas are most of it, and a cluster may hold hundreds of CRDs)."""
    versions = (crd.get("spec") or {}).get("versions")
    kept = [{"name": v.get("name"), "subresources": {"scale": compact((v.get("subresources") or {}).get("scale"))}}
            for v in versions if isinstance(v, Mapping)] if isinstance(versions, list) else versions
    return {**strip_metadata({k: v for k, v in crd.items() if k != "spec"}), "spec": {"versions": kept}}


def _port_check(direct: KubeScaleClient, client: KubeClient) -> None:
    """mypy proves the cached client satisfies its port."""
    port: ScaleClient = CachedScaleClient(direct, client)
    del port
