"""Watch cache of one resource: list once, then watch from the list's resourceVersion.

Job: keep an in-memory copy of a collection so request handlers never LIST per request.
Semantics follow client-go's reflector: paginated LIST (limit/continue), WATCH with
`allowWatchBookmarks=true` resumed from the last seen resourceVersion after a stream that ended
or broke, capped exponential backoff on errors and on relists that keep expiring. A full relist
(always a consistent read, no resourceVersion) replaces the whole store at once, so readers
never see half a list, and objects deleted meanwhile disappear. It happens:
* on `410 Gone`/`Expired` (ERROR event or HTTP 410): our resourceVersion was compacted away;
* on "Too large resource version" (a 504 Timeout whose cause is `ResourceVersionTooLarge`, as an
  ERROR event or an HTTP answer): the server is behind our resourceVersion, e.g. it lost its
  state or was restored from a backup;
* when the API server could not be reached for `relist_after_outage` seconds or more: a server
  that comes back may have other contents under resourceVersions we cannot compare (kube-apiserver
  silently waits on a watch from a future resourceVersion), so after a real outage the cache is
  rebuilt instead of trusted. Shorter interruptions resume the watch; a watch that delivered
  events before it broke ends any outage (and the backoff), so occasional resets do not add up.

A watch that stays silent for `watch_idle_seconds` (default `WATCH_IDLE_SECONDS`, 150 s) is
presumed dead and resumed on a new connection: kube-apiserver sends a bookmark about every minute
to a watch that allows them, so silence means the connection is gone without a reset (the API
server's host or a NAT in between vanished), which TCP alone reports only after many minutes.
client-go finds such connections with HTTP/2 pings; over HTTP/1.1 the bookmarks are the heartbeat.

Change notification: `on_change(cache)` after every applied event or relist. With
`track_changes=True` the cache also remembers WHICH keys changed since the last
`take_changes()` (added, modified or deleted `(namespace, name)`; a relist reports every key held
before or after it), so a listener can do O(changes) work instead of diffing the whole cache.

What is kept per object: `KubeObject` (identity, labels, phase...) and, for readers that need
more, the raw JSON (`keep_raw`) after `strip(raw)` (client-go's `SetTransform`: drop what the
reader never reads, such as managedFields, annotations and pod templates, before the object is
stored) and/or `convert(raw)`, the reader's own parsed value (`KubeObject.value`), when that is
all it needs; `keep_labels=False` for a reader that never selects by label. `strip` and
`convert` run once per object version, as it enters the cache; one that raises leaves `value`
None and the raw JSON whole (logged) rather than ending the watch.

Non-goals: writes, resync callbacks per object.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced, KubeAPIError, KubeError, KubeUnavailable
from kubecommon.kube.objects import KubeObject, from_api
from kubecommon.kube.resources import ResourceInfo
from kubecommon.lru import LRUCache
from kubecommon.selectors import Selector

__all__ = ["KEPT_SELECTIONS", "RELIST_AFTER_OUTAGE", "WATCH_IDLE_SECONDS", "ObjectCache"]

_log = logging.getLogger(__name__)
_PAGE_SIZE = "500"
#: seconds without reaching the API server after which the cache relists instead of resuming
RELIST_AFTER_OUTAGE = 5.0
#: seconds without a byte on a watch (event or bookmark) after which its connection is presumed
#: dead: 2½ times kube-apiserver's bookmark period (one minute, `defaultBookmarkFrequency`)
WATCH_IDLE_SECONDS = 150.0
#: spelled out here: inside ObjectCache, `list` names its own method
_Objects = list[KubeObject]
#: label-selector answers kept per cache by default, each valid while its namespace is unchanged:
#: an HPA asks with the same selector every sync period, and matching 2,000 pods costs ~2 ms
KEPT_SELECTIONS = 256


class _Expired(Exception):
    """The resourceVersion we hold is no longer usable (compacted, or ahead of the server): relist."""


def _event_parts(event: Any) -> tuple[Any, Mapping[str, Any], Mapping[str, Any]]:
    """(type, object, object's metadata) of a watch event; ValueError naming what is not a JSON
    object. A ValueError ends the watch with a logged warning and the next one resumes after the
    last event applied, where an AttributeError on a malformed event would end the reflector."""
    if not isinstance(event, Mapping):
        raise _malformed("the event", event)
    obj = event.get("object") or {}
    if not isinstance(obj, Mapping):
        raise _malformed("its object", obj)
    meta = obj.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise _malformed("its metadata", meta)
    return event.get("type"), obj, meta


def _malformed(what: str, value: Any) -> ValueError:
    return ValueError(f"malformed watch event from the API server: {what} is a {type(value).__name__}, "
                      "not an object")


def _too_large(status: Mapping[str, Any]) -> bool:
    """A Status saying our resourceVersion is ahead of the server (kube-apiserver's 504 wording)."""
    causes = (status.get("details") or {}).get("causes") or ()
    if any(isinstance(c, Mapping) and c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        return True
    return status.get("code") == 504 and "too large resource version" in str(status.get("message")).lower()


def _must_relist(err: BaseException) -> bool:
    """An HTTP error that means our resourceVersion is unusable: 410, or too large."""
    if not isinstance(err, KubeAPIError):
        return False
    return err.code == 410 or _too_large(err.status.to_dict())


class ObjectCache:
    def __init__(self, client: KubeClient, info: ResourceInfo, *, namespace: str | None = None,
                 field_selector: str | None = None, keep_data: bool = False,
                 keep_raw: bool = False, strip: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
                 convert: Callable[[Mapping[str, Any]], Any] | None = None, keep_labels: bool = True,
                 on_change: Callable[[ObjectCache], None] | None = None, track_changes: bool = False,
                 watch_timeout_seconds: int = 300, watch_idle_seconds: float = WATCH_IDLE_SECONDS,
                 max_backoff: float = 30.0, relist_after_outage: float = RELIST_AFTER_OUTAGE,
                 kept_selections: int = KEPT_SELECTIONS) -> None:
        self.info = info
        self._client = client
        self._namespace = namespace
        self._field_selector = field_selector
        self._keep_data = keep_data
        self._keep_raw = keep_raw
        self._strip = strip
        self._convert = convert
        self._keep_labels = keep_labels
        self._on_change = on_change
        self._watch_timeout = watch_timeout_seconds
        self._watch_idle = watch_idle_seconds
        self._max_backoff = max_backoff
        self._relist_after_outage = relist_after_outage
        self._store: dict[str, dict[str, KubeObject]] = {}
        self._views: dict[str | None, list[KubeObject]] = {}  # namespaces holding objects, and None
        self._no_objects: _Objects = []  # the view of every namespace without objects; never changed
        # (namespace, selector) -> (the view it was matched against, the objects that matched)
        self._selections: LRUCache[tuple[str | None, Selector], tuple[_Objects, _Objects]] = \
            LRUCache(kept_selections)
        self._track_changes = track_changes
        self._changed: set[tuple[str, str]] = set()  # (namespace, name) since the last take_changes()
        self._synced = asyncio.Event()
        self._attempted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # the last resourceVersion seen (list, event or bookmark): the next watch resumes there;
        # None: list next
        self._version: str | None = None
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
        """The objects of `namespace` (None = all) that `selector` matches, in (namespace, name)
        order; a new list the caller may keep."""
        return [*self.snapshot(namespace, selector)]

    def snapshot(self, namespace: str | None, selector: Selector | None = None) -> Sequence[KubeObject]:
        """`list`, NOT a copy: read it, never change it. The same object is returned until that
        namespace changes, so a caller can remember what it derived from a snapshot and reuse it
        while `snapshot(namespace, selector) is` the one it saw; and a selector is matched against
        the namespace once per change, not once per call (an HPA asks with the same selector every
        sync period)."""
        scope = namespace if self.info.namespaced else None
        view = self._view(scope)
        if selector is None or selector.is_empty():
            return view
        kept = self._selections.get((scope, selector))
        if kept is None or kept[0] is not view:
            match = selector.matches
            kept = (view, [obj for obj in view if match(obj.labels)])
            self._selections.put((scope, selector), kept)
        return kept[1]

    def _view(self, namespace: str | None) -> _Objects:
        """Sorted objects of one namespace (None = all), rebuilt only after a change there."""
        view = self._views.get(namespace)
        if view is None:
            if namespace is None:
                view = [obj for _, bucket in sorted(self._store.items()) for _, obj in sorted(bucket.items())]
            elif namespace not in self._store:
                return self._no_objects  # not kept per name: any namespace can be asked for
            else:
                view = [obj for _, obj in sorted(self._store[namespace].items())]
            self._views[namespace] = view
        return view

    def take_changes(self) -> set[tuple[str, str]]:
        """The `(namespace, name)` keys added, modified or deleted since the last call (needs
        `track_changes=True`); look each up with `get` (None: deleted)."""
        changed, self._changed = self._changed, set()
        return changed

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
        loop = asyncio.get_running_loop()
        self._version = None  # a (re)started cache lists first
        failures = expiries = 0  # failed attempts / expired watches that made no progress, in a row
        unreachable_since: float | None = None  # start of the current outage
        while True:
            before = self._version
            try:
                if self._version is None:
                    self._version, unreachable_since = await self._relist(), None
                started, before = loop.time(), self._version
                await self._watch(self._version)
                failures = expiries = 0
                unreachable_since = None
                if self._version == before and loop.time() - started < 1.0:
                    await asyncio.sleep(1.0)  # a server that ends empty watches at once must not spin us
            except _Expired:
                # client-go backs off before every relist; here only a relist that did not help
                # waits: an answer that keeps expiring must not turn into a LIST storm
                expiries = 1 if self._version != before else expiries + 1
                _log.info("watch cache %s: resourceVersion %s no longer usable, relisting", self.info.resource,
                          self._version)
                self._version = None
                if expiries > 1:
                    await asyncio.sleep(self._backoff(expiries - 1))
            except (KubeError, ValueError, KeyError, TypeError) as err:
                if self._version != before:  # the watch delivered events: not a failure in a row
                    failures, unreachable_since = 0, None
                self.last_error = err
                self._attempted.set()
                failures += 1
                if isinstance(err, KubeUnavailable):
                    unreachable_since = unreachable_since if unreachable_since is not None else loop.time()
                elif not isinstance(err, KubeAPIError) or not _must_relist(err):
                    unreachable_since = None  # the server answered
                delay = self._backoff(failures)
                _log.warning("watch cache %s: %s; retrying in %.1fs", self.info.resource, err, delay)
                if _must_relist(err):
                    self._version = None
                await asyncio.sleep(delay)
                if unreachable_since is not None and self._version is not None \
                        and loop.time() - unreachable_since >= self._relist_after_outage:
                    _log.info("watch cache %s: API server unreachable for %.0fs, relisting instead of resuming",
                              self.info.resource, loop.time() - unreachable_since)
                    self._version = None

    def _backoff(self, attempts: int) -> float:
        """Seconds to wait after `attempts` failures in a row: doubling from 0.4 s, capped, jittered."""
        doubled: float = 0.2 * 2.0 ** min(attempts, 10)
        return min(self._max_backoff, doubled) * (0.8 + 0.4 * random.random())

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
            page: Any = await self._client.get(path, params)
            items = page.get("items") or () if isinstance(page, Mapping) else None
            meta = page.get("metadata") or {} if isinstance(page, Mapping) else None
            if not isinstance(items, (list, tuple)) or not isinstance(meta, Mapping):
                raise ValueError(f"malformed list answer from the API server for {path}: "
                                 "no items list or metadata object")
            for item in items:
                self._put(store, item)
            token = meta.get("continue")
            if not token:
                break
            params = {**params, "continue": str(token)}
        if self._track_changes:
            for bucket_store in (self._store, store):
                self._changed.update((ns, name) for ns, bucket in bucket_store.items() for name in bucket)
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
        value, stripped = None, None
        if isinstance(raw, Mapping) and (self._convert is not None or (self._keep_raw and self._strip is not None)):
            try:
                value = self._convert(raw) if self._convert is not None else None
                stripped = self._strip(raw) if self._keep_raw and self._strip is not None else None
            except Exception:  # a reader's parser bug must not stop the reflector: keep the raw JSON
                _log.exception("watch cache %s: cannot convert or strip an object", self.info.resource)
        obj = from_api(raw, kind=self.info.kind, api_version=self.info.api_version,
                       keep_data=self._keep_data, keep_raw=self._keep_raw, stripped=stripped, value=value,
                       keep_labels=self._keep_labels)
        store.setdefault(obj.namespace, {})[obj.name] = obj
        return obj

    async def _watch(self, resource_version: str) -> None:
        """One watch from `resource_version`; every applied event or bookmark moves the version
        to resume from, so a stream that breaks resumes after the last event it delivered."""
        params = {**self._params(), "resourceVersion": resource_version,
                  "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(int(self._watch_timeout * (1 + random.random())))}
        path = self.info.collection_path(self._namespace)
        async for event in self._client.watch(path, params, read_timeout=self._watch_idle):
            resource_version = self._version = self._apply(event, resource_version)

    def _apply(self, event: Mapping[str, Any], resource_version: str) -> str:
        kind, obj, meta = _event_parts(event)
        if kind == "ERROR":
            if obj.get("code") == 410 or obj.get("reason") in ("Expired", "Gone") or _too_large(obj):
                raise _Expired()
            raise KubeError(f"watch error: {obj.get('message') or obj}")
        new_rv = str(meta.get("resourceVersion") or resource_version)
        if kind in ("ADDED", "MODIFIED"):
            put = self._put(self._store, obj)
            self._touched(put.namespace)
            if self._track_changes:
                self._changed.add((put.namespace, put.name))
        elif kind == "DELETED":
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            bucket = self._store.get(namespace)
            if bucket is not None:
                bucket.pop(name, None)
                if not bucket:  # namespaces come and go: keep none that holds nothing
                    del self._store[namespace]
            self._touched(namespace)
            if self._track_changes:
                self._changed.add((namespace, name))
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
