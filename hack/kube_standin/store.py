"""In-memory object storage with one global resourceVersion and a bounded watch event log.

It plays etcd plus the watch cache: every write gets the next revision, every bucket (one
resource's objects) keeps its recent events so a watch can resume from a resourceVersion, and
a resume from a version older than the retained window is refused (the caller answers 410 Gone).
Objects are treated as immutable once committed: writes store new dicts, so events and readers
can keep references. Encoded JSON is cached per object so large lists are cheap.

Non-goals: persistence, multi-version storage, transactions across buckets.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
Obj = dict[str, Any]


def encode(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(slots=True, kw_only=True, frozen=False)  # frozen=False: encoded bytes filled lazily
class Entry:
    obj: Obj
    _encoded: bytes | None = None

    @property
    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = encode(self.obj)
        return self._encoded


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    rv: int
    type: str  # ADDED / MODIFIED / DELETED
    obj: Obj
    prev: Obj | None


@dataclass(slots=True, kw_only=True, frozen=False, eq=False)  # frozen=False: a live subscription
class Watcher:
    queue: asyncio.Queue[Event | None]
    max_backlog: int
    closed: bool = False

    def offer(self, event: Event | None) -> None:
        if self.closed:
            return
        if event is not None and self.queue.qsize() >= self.max_backlog:
            # A consumer this far behind is cut off, as the real watch cache does.
            self.closed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(event)


@dataclass(slots=True, kw_only=True, frozen=False)  # frozen=False: the bucket is the mutable state
class Bucket:
    objects: dict[Key, Entry] = field(default_factory=dict)
    log: deque[Event] = field(default_factory=deque)
    floor: int = 0  # events with rv <= floor are no longer retained
    watchers: set[Watcher] = field(default_factory=set)
    sorted_keys: list[Key] | None = None


class TooOldResourceVersion(Exception):
    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Store:
    def __init__(self, *, log_size: int = 10000, max_backlog: int = 100000, revision: int = 1) -> None:
        self._rv = revision
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._log_size = log_size
        self._max_backlog = max_backlog
        self._hooks: list[Callable[[tuple[str, str], Event], None]] = []

    @property
    def revision(self) -> int:
        return self._rv

    def on_commit(self, hook: Callable[[tuple[str, str], Event], None]) -> None:
        """Register a synchronous observer of every committed write (controllers, cache)."""
        self._hooks.append(hook)

    def bucket(self, storage: tuple[str, str]) -> Bucket:
        b = self._buckets.get(storage)
        if b is None:
            b = self._buckets[storage] = Bucket()
        return b

    def get(self, storage: tuple[str, str], key: Key) -> Obj | None:
        entry = self.bucket(storage).objects.get(key)
        return entry.obj if entry else None

    def encoded(self, storage: tuple[str, str], key: Key, obj: Obj) -> bytes:
        """The cached JSON of `obj` if it is the stored version, else freshly encoded."""
        entry = self.bucket(storage).objects.get(key)
        if entry is not None and entry.obj is obj:
            return entry.encoded
        return encode(obj)

    def entries(self, storage: tuple[str, str], namespace: str | None = None) -> list[Entry]:
        """Entries in key order (namespace, then name), like etcd's key space."""
        b = self.bucket(storage)
        if b.sorted_keys is None:
            b.sorted_keys = sorted(b.objects)
        if namespace is None:
            return [b.objects[k] for k in b.sorted_keys]
        return [b.objects[k] for k in b.sorted_keys if k[0] == namespace]

    def objects(self, storage: tuple[str, str], namespace: str | None = None) -> list[Obj]:
        return [e.obj for e in self.entries(storage, namespace)]

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def put(self, storage: tuple[str, str], key: Key, obj: Obj, *, rv: int) -> Event:
        """Store `obj` (already carrying metadata.resourceVersion == rv) and emit its event."""
        b = self.bucket(storage)
        prev_entry = b.objects.get(key)
        if prev_entry is None:
            b.sorted_keys = None
        b.objects[key] = Entry(obj=obj)
        event = Event(rv=rv, type="MODIFIED" if prev_entry else "ADDED", obj=obj,
                      prev=prev_entry.obj if prev_entry else None)
        self._emit(storage, b, event)
        return event

    def remove(self, storage: tuple[str, str], key: Key, *, final: Obj, rv: int) -> Event:
        b = self.bucket(storage)
        prev = b.objects.pop(key)
        b.sorted_keys = None
        event = Event(rv=rv, type="DELETED", obj=final, prev=prev.obj)
        self._emit(storage, b, event)
        return event

    def _emit(self, storage: tuple[str, str], b: Bucket, event: Event) -> None:
        b.log.append(event)
        while len(b.log) > self._log_size:
            b.floor = b.log.popleft().rv
        for w in list(b.watchers):
            w.offer(event)
        for hook in self._hooks:
            hook(storage, event)

    def events_since(self, storage: tuple[str, str], since: int) -> list[Event]:
        """The retained events after `since`; TooOldResourceVersion once they were compacted."""
        b = self.bucket(storage)
        if since < b.floor:
            raise TooOldResourceVersion(since, b.floor + 1)
        return [e for e in b.log if e.rv > since]

    def watch(self, storage: tuple[str, str], since: int | None) -> tuple[Watcher, list[Event]]:
        """Subscribe; return the watcher and the retained events after `since` (None: none)."""
        backlog = [] if since is None else self.events_since(storage, since)
        w = Watcher(queue=asyncio.Queue(), max_backlog=self._max_backlog)
        self.bucket(storage).watchers.add(w)
        return w, backlog

    def compact(self) -> None:
        """Forget all history up to now: a watch from any version so far gets TooOldResourceVersion."""
        for b in self._buckets.values():
            b.log.clear()
            b.floor = self._rv + 1

    def unwatch(self, storage: tuple[str, str], watcher: Watcher) -> None:
        watcher.closed = True
        self.bucket(storage).watchers.discard(watcher)

    def close_watchers(self) -> None:
        for b in self._buckets.values():
            for w in list(b.watchers):
                w.offer(None)

    def storages(self) -> Iterable[tuple[str, str]]:
        return list(self._buckets)
