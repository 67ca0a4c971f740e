"""client-go's EventCorrelator (`tools/record/events_cache.go`), pure: which event to write, how.

Three stages, in client-go's order, each remembering at most `CACHE_ENTRIES` keys (LRU):
1. aggregation: events alike except for the message (same object, type, reason, source) are
   counted per `AGGREGATE_INTERVAL_SECONDS`; from the `MAX_SIMILAR_MESSAGES`-th distinct message
   on they become one event whose message starts "(combined from similar events): ";
2. deduplication: an event seen before (same key including message) is not created again:
   its `count` goes up and the existing Event is patched (count, lastTimestamp, message);
3. spam filter: a token bucket per source+object (burst `SPAM_BURST`, one token per
   `SPAM_REFILL_SECONDS`) drops whatever exceeds it, count updates included.

Non-goals: building the Event JSON or writing it (events.py). Pure: time comes in as `now`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kubecommon.lru import LRUCache

__all__ = ["AGGREGATE_INTERVAL_SECONDS", "Action", "Correlated", "EventCorrelator", "EventRecord",
           "MAX_SIMILAR_MESSAGES", "SPAM_BURST", "SPAM_REFILL_SECONDS"]

CACHE_ENTRIES = 4096
MAX_SIMILAR_MESSAGES = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
COMBINED_PREFIX = "(combined from similar events): "


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    """One event about one object, before correlation."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    component: str
    host: str = ""


class Action(StrEnum):
    CREATE = "create"
    PATCH = "patch"


@dataclass(frozen=True, slots=True, kw_only=True)
class Correlated:
    """What to write: a new Event named `event_name`, or a patch of the existing one."""

    action: Action
    record: EventRecord  # message possibly rewritten by aggregation
    event_name: str
    count: int
    first_timestamp: float
    last_timestamp: float


@dataclass(slots=True)
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last_seen: float = float("-inf")


@dataclass(frozen=True, slots=True)
class _Seen:
    name: str
    count: int
    first_timestamp: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


def _object_key(r: EventRecord) -> tuple[str, ...]:
    return (r.component, r.host, r.kind, r.namespace, r.name, r.uid, r.api_version)


class EventCorrelator:
    def __init__(self) -> None:
        self._aggregates: LRUCache[tuple[str, ...], _Aggregate] = LRUCache(CACHE_ENTRIES)
        self._seen: LRUCache[tuple[str, ...], _Seen] = LRUCache(CACHE_ENTRIES)
        self._buckets: LRUCache[tuple[str, ...], _Bucket] = LRUCache(CACHE_ENTRIES)
        self._last_nanos = 0  # event names stay unique when two events share a clock reading

    def correlate(self, record: EventRecord, *, now: float) -> Correlated | None:
        """The write to make for `record`, or None when the spam filter drops it."""
        record, key = self._aggregate(record, now)
        seen = self._seen.get(key)
        if seen is not None:
            result = Correlated(action=Action.PATCH, record=record, event_name=seen.name, count=seen.count + 1,
                                first_timestamp=seen.first_timestamp, last_timestamp=now)
        else:
            result = Correlated(action=Action.CREATE, record=record, event_name=self._event_name(record.name, now),
                                count=1, first_timestamp=now, last_timestamp=now)
        self._seen.put(key, _Seen(name=result.event_name, count=result.count, first_timestamp=result.first_timestamp))
        if not self._accept(_object_key(record), now):
            return None
        return result

    def forget(self, result: Correlated) -> Correlated:
        """The Event to patch no longer exists (expired): create it afresh under a new name."""
        fresh = Correlated(action=Action.CREATE, record=result.record,
                           event_name=self._event_name(result.record.name, result.last_timestamp), count=1,
                           first_timestamp=result.last_timestamp, last_timestamp=result.last_timestamp)
        for key in (_event_key(result.record), (*_aggregate_key(result.record), "")):
            if self._seen.get(key) is not None:
                self._seen.put(key, _Seen(name=fresh.event_name, count=1, first_timestamp=fresh.first_timestamp))
        return fresh

    def _event_name(self, object_name: str, now: float) -> str:
        """client-go names an Event `<object>.<unix nanoseconds in hex>`."""
        self._last_nanos = max(int(now * 1_000_000_000), self._last_nanos + 1)
        return f"{object_name}.{self._last_nanos:x}"

    def _aggregate(self, record: EventRecord, now: float) -> tuple[EventRecord, tuple[str, ...]]:
        key = _aggregate_key(record)
        entry = self._aggregates.get(key)
        if entry is None or now - entry.last_seen > AGGREGATE_INTERVAL_SECONDS:
            entry = _Aggregate()
        entry.messages.add(record.message)
        entry.last_seen = now
        self._aggregates.put(key, entry)
        if len(entry.messages) < MAX_SIMILAR_MESSAGES:
            return record, _event_key(record)
        entry.messages.pop()  # never grow beyond the threshold
        combined = EventRecord(kind=record.kind, api_version=record.api_version, namespace=record.namespace,
                               name=record.name, uid=record.uid, type=record.type, reason=record.reason,
                               message=COMBINED_PREFIX + record.message, component=record.component,
                               host=record.host)
        return combined, (*key, "")

    def _accept(self, key: tuple[str, ...], now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(tokens=float(SPAM_BURST), updated=now)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + max(0.0, now - bucket.updated) / SPAM_REFILL_SECONDS)
        bucket.updated = now
        accepted = bucket.tokens >= 1.0
        if accepted:
            bucket.tokens -= 1.0
        self._buckets.put(key, bucket)
        return accepted


def _aggregate_key(r: EventRecord) -> tuple[str, ...]:
    return (*_object_key(r), r.type, r.reason)


def _event_key(r: EventRecord) -> tuple[str, ...]:
    return (*_aggregate_key(r), r.message)

