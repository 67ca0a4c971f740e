"""`KubeScaleClient`: the scale target's `/scale` subresource over `KubeClient` (ports.ScaleClient).

Job, as upstream's scale client and HPA controller do it: only the group of
`scaleTargetRef.apiVersion` matters; every version of the group that serves the kind with a
`scale` subresource is tried (the asked version first, then the preferred), keeping the first
success. A 404 saying the path is not served (no object name in the Status details) means the
mapping went stale: discovery is refreshed once and the call retried. Writes are a PUT of an
`autoscaling/v1` Scale carrying the resourceVersion that was read; a 409 re-reads the scale,
returns at once when it already has the wanted replicas, and otherwise retries with the fresh
resourceVersion (client-go `retry.DefaultRetry`: 5 attempts ~10 ms apart, jittered), in
`update_on_conflict_retry`, which the map-backed fake runs too.

Non-goals: caching scales (each call reads fresh; `controller.kube.scale_cache` answers reads
from watch caches and falls back to this client), choosing what to write.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable
from typing import Any

from controller.kube.ports import ScaleClient, ScaleInfo, TargetRef
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, KubeUnavailable, UnknownKind
from kubecommon.kube.resources import ResourceInfo, ResourceResolver, split_api_version
from kubecommon.lru import LRUCache

__all__ = ["KubeScaleClient", "scale_from_json", "update_on_conflict_retry"]

_ATTEMPTS = 5
_BACKOFF_SECONDS = 0.01
_JITTER = 0.1
_ORDERED_ENTRIES = 256  # distinct (apiVersion, kind) targets remembered


def scale_from_json(doc: dict[str, Any]) -> ScaleInfo:
    """An autoscaling/v1 Scale -> ScaleInfo. Raises KubeUnavailable on a body that is no Scale."""
    spec, status, meta = doc.get("spec") or {}, doc.get("status") or {}, doc.get("metadata") or {}
    try:
        return ScaleInfo(spec_replicas=int(spec.get("replicas") or 0), status_replicas=int(status.get("replicas") or 0),
                         selector=str(status.get("selector") or ""),
                         resource_version=str(meta.get("resourceVersion") or ""))
    except (TypeError, ValueError, AttributeError) as err:
        raise KubeUnavailable(f"the scale subresource answered a malformed Scale: {err}") from None


async def update_on_conflict_retry(
    put: Callable[[ScaleInfo], Awaitable[ScaleInfo]], get: Callable[[], Awaitable[ScaleInfo]], replicas: int,
    scale: ScaleInfo, *, sleep: Callable[[float], Awaitable[None]], jitter: Callable[[], float],
    retried: Callable[[], None] = lambda: None,
) -> ScaleInfo:  # fmt: skip
    """`put` (a PUT of `replicas` carrying the given scale's resourceVersion) as client-go's
    `retry.RetryOnConflict(retry.DefaultRetry, ...)` runs it: a 409 re-reads (`get`), returns at
    once when the scale already has `replicas`, else puts again; at most 5 attempts ~10 ms apart
    (`jitter()` in [0, 1) stretches each by up to 10 %); the last error is raised. The one copy,
    shared by `KubeScaleClient` and the map-backed fake (controller.kube.fake)."""
    current = scale
    for attempt in range(_ATTEMPTS):
        try:
            return await put(current)
        except KubeAPIError as err:
            if err.code != 409 or attempt == _ATTEMPTS - 1:
                raise
        retried()
        await sleep(_BACKOFF_SECONDS * (1 + _JITTER * jitter()))
        current = await get()
        if current.spec_replicas == replicas:
            return current  # someone (or our earlier attempt) already wrote it
    raise AssertionError("unreachable: the last attempt raises")


def _path_not_served(err: KubeAPIError) -> bool:
    """A 404 for the path itself (stale mapping), not for a named object."""
    return err.code == 404 and not err.status.details.get("name")


class KubeScaleClient:
    def __init__(self, client: KubeClient, resolver: ResourceResolver, *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 rng: random.Random | None = None) -> None:
        self._client = client
        self._resolver = resolver
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.conflicts_retried = 0  # 409s answered with a re-read and a new attempt (self-metrics)
        # (apiVersion, kind) -> (the resolver's mappings, the scalable ones in try order), per sync
        self._ordered: LRUCache[tuple[str, str], tuple[tuple[ResourceInfo, ...], tuple[ResourceInfo, ...]]] = \
            LRUCache(_ORDERED_ENTRIES)

    async def get(self, namespace: str, ref: TargetRef) -> ScaleInfo:
        return await self._on_first_mapping(ref, lambda info: self._get(info, namespace, ref.name))

    async def mapping(self, ref: TargetRef) -> ResourceInfo:
        """The resource `get` tries first for `ref` (the asked version when it serves the kind's
        scale, else the preferred). Raises `UnknownKind` like `get`."""
        return (await self._mappings(ref))[0]

    async def update(self, namespace: str, ref: TargetRef, replicas: int, scale: ScaleInfo) -> ScaleInfo:
        def put(current: ScaleInfo) -> Awaitable[ScaleInfo]:
            return self._on_first_mapping(ref, functools.partial(
                self._put, namespace=namespace, name=ref.name, replicas=replicas,
                resource_version=current.resource_version))  # fmt: skip

        return await update_on_conflict_retry(put, lambda: self.get(namespace, ref), replicas, scale,
                                              sleep=self._sleep, jitter=self._rng.random, retried=self._retried)

    def _retried(self) -> None:
        self.conflicts_retried += 1

    async def _mappings(self, ref: TargetRef) -> tuple[ResourceInfo, ...]:
        group, version = split_api_version(ref.api_version, ref.kind)
        mappings = await self._resolver.kind_mappings(group, ref.kind)
        key = (ref.api_version, ref.kind)
        known = self._ordered.get(key)
        if known is not None and known[0] is mappings:  # the resolver's answer is unchanged: reuse the order
            return known[1]
        scalable = tuple(sorted((m for m in mappings if m.scalable), key=lambda m: m.version != version))
        if scalable:
            self._ordered.put(key, (mappings, scalable))
        if not scalable:
            raise UnknownKind(group, ref.kind, detail=(
                f'kind "{ref.kind}" in group "{group}" has no scale subresource ({mappings[0].resource} '
                f"cannot be autoscaled)"))
        return scalable

    async def _on_first_mapping(self, ref: TargetRef,
                                call: Callable[[ResourceInfo], Awaitable[ScaleInfo]]) -> ScaleInfo:
        group, _version = split_api_version(ref.api_version, ref.kind)
        for refreshed in (False, True):
            first_error: KubeAPIError | None = None
            for info in await self._mappings(ref):
                try:
                    return await call(info)
                except KubeAPIError as err:
                    if not _path_not_served(err):
                        raise
                    first_error = first_error or err
            if refreshed and first_error is not None:
                raise first_error
            self._resolver.forget_kind(group, ref.kind)
        raise AssertionError("unreachable: the refreshed round returns or raises")

    @staticmethod
    def _path(info: ResourceInfo, namespace: str, name: str) -> str:
        return f"{info.collection_path(namespace)}/{name}/scale"

    async def _get(self, info: ResourceInfo, namespace: str, name: str) -> ScaleInfo:
        return scale_from_json(await self._client.get(self._path(info, namespace, name)))

    async def _put(self, info: ResourceInfo, namespace: str, name: str, replicas: int,
                   resource_version: str) -> ScaleInfo:
        meta: dict[str, str] = {"name": name, "namespace": namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": meta, "spec": {"replicas": replicas}}
        return scale_from_json(await self._client.put(self._path(info, namespace, name), body))


def _port_check(client: KubeClient, resolver: ResourceResolver) -> None:
    """mypy proves the real client satisfies its port."""
    port: ScaleClient = KubeScaleClient(client, resolver)
    del port
