"""Watch cache of one resource: list once, then watch from the list's resourceVersion.

Job: keep an in-memory copy of a collection so request handlers never LIST per request.
Semantics follow client-go's reflector: paginated LIST (limit/continue), WATCH with
`allowWatchBookmarks=true` resumed from the last seen resourceVersion after a dropped stream,
full relist on `410 Gone`/`Expired` (ERROR event or HTTP 410), capped exponential backoff on
errors. A relist replaces the whole store at once so readers never see half a list.

Non-goals: writes, resync callbacks per object (only a whole-cache `on_change` notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced, KubeAPIError, KubeError
from kubecommon.kube.objects import KubeObject, from_api
from kubecommon.kube.resources import ResourceInfo
from kubecommon.selectors import Selector

__all__ = ["ObjectCache"]

_log = logging.getLogger(__name__)
_PAGE_SIZE = "500"
#: spelled out here: inside ObjectCache, `list` names its own method
_Objects = list[KubeObject]


class _Expired(Exception):
    """The resourceVersion we hold is too old: relist."""


class ObjectCache:
    def __init__(self, client: KubeClient, info: ResourceInfo, *, namespace: str | None = None,
                 field_selector: str | None = None, keep_data: bool = False,
                 keep_raw: bool = False,
                 on_change: Callable[[ObjectCache], None] | None = None,
                 watch_timeout_seconds: int = 300, max_backoff: float = 30.0) -> None:
        self.info = info
        self._client = client
        self._namespace = namespace
        self._field_selector = field_selector
        self._keep_data = keep_data
        self._keep_raw = keep_raw
        self._on_change = on_change
        self._watch_timeout = watch_timeout_seconds
        self._max_backoff = max_backoff
        self._store: dict[str, dict[str, KubeObject]] = {}
        self._views: dict[str | None, list[KubeObject]] = {}
        self._synced = asyncio.Event()
        self._attempted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.last_error: BaseException | None = None
        self.relists = 0

    # --- ObjectReader -------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def api_version(self) -> str:
        return self.info.api_version

    @property
    def namespaced(self) -> bool:
        return self.info.namespaced

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._store.values())

    def get(self, namespace: str | None, name: str) -> KubeObject | None:
        bucket = self._store.get((namespace or "") if self.info.namespaced else "")
        return bucket.get(name) if bucket else None

    def list(self, namespace: str | None, selector: Selector | None = None) -> Sequence[KubeObject]:
        view = self._view(namespace if self.info.namespaced else None)
        if selector is None or selector.is_empty():
            return view.copy()
        match = selector.matches
        return [obj for obj in view if match(obj.labels)]

    def _view(self, namespace: str | None) -> _Objects:
        """Sorted objects of one namespace (None = all), rebuilt only after a change there."""
        view = self._views.get(namespace)
        if view is None:
            if namespace is None:
                view = [obj for _, bucket in sorted(self._store.items()) for _, obj in sorted(bucket.items())]
            else:
                view = [obj for _, obj in sorted((self._store.get(namespace) or {}).items())]
            self._views[namespace] = view
        return view

    def _touched(self, namespace: str) -> None:
        self._views.pop(namespace, None)
        self._views.pop(None, None)

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watch-cache {self.info.resource}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def wait_synced(self, timeout: float) -> None:
        """Return once the first list landed; raise the API error or CacheNotSynced otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not self._attempted.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._attempted.wait(), timeout)
        if self.synced:
            return
        if isinstance(self.last_error, KubeAPIError) and self.last_error.code in (401, 403, 404):
            raise self.last_error  # RBAC or a vanished resource: waiting will not help
        try:
            await asyncio.wait_for(self._synced.wait(), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise CacheNotSynced(f"cache of {self.info.resource} not synced after {timeout:g}s: "
                                 f"{self.last_error}") from None

    # --- reflector loop -----------------------------------------------------------------------
    async def _run(self) -> None:
        resource_version: str | None = None
        failures = 0
        while True:
            try:
                if resource_version is None:
                    resource_version = await self._relist()
                started, before = asyncio.get_running_loop().time(), resource_version
                resource_version = await self._watch(resource_version)
                failures = 0
                if resource_version == before and asyncio.get_running_loop().time() - started < 1.0:
                    await asyncio.sleep(1.0)  # a server that ends empty watches at once must not spin us
            except _Expired:
                _log.debug("watch cache %s: resourceVersion %s expired, relisting", self.info.resource,
                           resource_version)
                resource_version = None
            except (KubeError, ValueError, KeyError, TypeError) as err:
                self.last_error = err
                self._attempted.set()
                failures += 1
                delay = min(self._max_backoff, 0.2 * 2 ** min(failures, 10)) * (0.8 + 0.4 * random.random())
                _log.warning("watch cache %s: %s; retrying in %.1fs", self.info.resource, err, delay)
                if isinstance(err, KubeAPIError) and err.code == 410:
                    resource_version = None
                await asyncio.sleep(delay)

    def _params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self._field_selector:
            params["fieldSelector"] = self._field_selector
        return params

    async def _relist(self) -> str:
        path = self.info.collection_path(self._namespace)
        store: dict[str, dict[str, KubeObject]] = {}
        params = {**self._params(), "limit": _PAGE_SIZE}
        while True:
            page = await self._client.get(path, params)
            for item in page.get("items") or ():
                self._put(store, item)
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                break
            params = {**params, "continue": str(token)}
        self._store, self._views = store, {}
        self.relists += 1
        _log.debug("watch cache %s: listed %d objects at resourceVersion %s", self.info.resource,
                   sum(len(b) for b in store.values()), meta.get("resourceVersion"))
        self.last_error = None
        self._synced.set()
        self._attempted.set()
        self._notify()
        return str(meta.get("resourceVersion") or "")

    def _put(self, store: dict[str, dict[str, KubeObject]], raw: Mapping[str, Any]) -> KubeObject:
        obj = from_api(raw, kind=self.info.kind, api_version=self.info.api_version,
                       keep_data=self._keep_data, keep_raw=self._keep_raw)
        store.setdefault(obj.namespace, {})[obj.name] = obj
        return obj

    async def _watch(self, resource_version: str) -> str:
        params = {**self._params(), "resourceVersion": resource_version,
                  "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(int(self._watch_timeout * (1 + random.random())))}
        path = self.info.collection_path(self._namespace)
        async for event in self._client.watch(path, params, read_timeout=self._watch_timeout * 2 + 30):
            resource_version = self._apply(event, resource_version)
        return resource_version

    def _apply(self, event: Mapping[str, Any], resource_version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410 or obj.get("reason") in ("Expired", "Gone"):
                raise _Expired()
            raise KubeError(f"watch error: {obj.get('message') or obj}")
        new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or resource_version)
        if kind in ("ADDED", "MODIFIED"):
            self._touched(self._put(self._store, obj).namespace)
        elif kind == "DELETED":
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "")
            bucket = self._store.get(namespace)
            if bucket is not None:
                bucket.pop(str(meta.get("name") or ""), None)
            self._touched(namespace)
        elif kind != "BOOKMARK":
            return resource_version
        if kind != "BOOKMARK":
            self._notify()
        return new_rv

    def _notify(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:  # a listener bug must not kill the reflector
                _log.exception("watch cache %s: change listener failed", self.info.resource)
