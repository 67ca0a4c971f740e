"""The set of watch caches the adapter keeps: one per group/resource, started on first use.

Job: implement the `ObjectCaches` Protocol over real `ObjectCache`s. A cache is created the
first time a request needs its resource (for `*` custom-metric requests and resource metrics),
then kept for the life of the process; concurrent first requests share one start. Readiness is
awaited with a timeout so a request never hangs on a cache that cannot sync.

Non-goals: eviction of unused caches (the set of resources is bounded by the rule file).
"""

from __future__ import annotations

import asyncio
import logging

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced
from kubecommon.kube.objects import GroupResourceLike, ObjectReader
from kubecommon.kube.resources import ResourceResolver
from kubecommon.singleflight import SingleFlight
from kubecommon.status import qualified_resource

__all__ = ["KubeObjectCaches"]

_log = logging.getLogger(__name__)


class KubeObjectCaches:
    def __init__(self, client: KubeClient, resolver: ResourceResolver, *, sync_timeout: float = 10.0) -> None:
        self._client = client
        self._resolver = resolver
        self._sync_timeout = sync_timeout
        self._caches: dict[tuple[str, str], ObjectCache] = {}
        # Concurrent first requests share one start, in its own task, so one caller leaving
        # cannot cancel the start for the others.
        self._starting: SingleFlight[tuple[str, str], ObjectCache] = SingleFlight()
        self._background: set[asyncio.Task[ObjectCache]] = set()
        self._stopped = False

    async def reader(self, resource: GroupResourceLike) -> ObjectReader:
        cache = await self._cache(resource.group, resource.resource)
        await cache.wait_synced(self._sync_timeout)
        return cache

    async def _cache(self, group: str, resource: str) -> ObjectCache:
        key = (group, resource)
        cache = self._caches.get(key)
        if cache is not None:
            return cache
        return await self._starting.do(key, lambda: self._create(key))

    async def _create(self, key: tuple[str, str]) -> ObjectCache:
        info = await self._resolver.resolve(*key)
        if self._stopped:  # a start in flight when `stop` ran must not leave a watch behind it
            raise CacheNotSynced(f"watch caches are stopped: {qualified_resource(key[1], key[0])} not started")
        # Aliases (singular names) resolve to the same plural: share its cache.
        canonical = (info.group, info.resource)
        cache = self._caches.get(canonical)
        if cache is None:
            cache = ObjectCache(self._client, info)
            cache.start()
            self._caches[canonical] = cache
            _log.info("started watch cache for %s", qualified_resource(info.resource, info.group))
        self._caches[key] = cache
        return cache

    def prewarm(self, *resources: tuple[str, str]) -> None:
        """Start caches in the background (pods and nodes at startup) without waiting."""
        for group, resource in resources:
            task = asyncio.create_task(self._cache(group, resource))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            task.add_done_callback(_log_failure)

    def sizes(self) -> dict[str, int]:
        """Objects per cached resource, for the adapter's own metrics (aliases share an entry)."""
        return {qualified_resource(cache.info.resource, cache.info.group): len(cache)
                for cache in self._caches.values()}

    async def stop(self) -> None:
        """Stop every cache, and the starts still in flight (`prewarm`'s, a request's): none
        begins watching afterwards."""
        self._stopped = True
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        for cache in {id(c): c for c in self._caches.values()}.values():
            await cache.stop()


def _log_failure(task: asyncio.Task[ObjectCache]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.warning("could not start watch cache: %s", task.exception())
