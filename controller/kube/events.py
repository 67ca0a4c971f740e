"""`KubeEventSink`: core/v1 Events for autoscalers, written in the background (ports.EventSink).

Job: `emit` never blocks and never fails the sync that calls it: events go into a bounded queue
(`QUEUE_SIZE`, as client-go's broadcaster; overflow is counted in `dropped`) and one background
task writes them. Before writing, client-go's correlator (event_correlator.py) aggregates
similar events, turns repeats into a PATCH of `count`/`lastTimestamp`, and drops spam (burst 25,
then one per 5 minutes per object). The source and reporting component is
`prom-autoscaler-controller`. A failed write is retried a few times with a short pause; a patch
of an Event that expired meanwhile creates it anew. Counters (`written`, `filtered`, `dropped`,
`failed`) feed the controller's self-metrics.

Non-goals: events.k8s.io/v1 (kubectl describe reads core/v1), choosing reasons (the algorithm).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from controller.algorithm.conditions import Event
from controller.kube.event_correlator import Action, Correlated, EventCorrelator, EventRecord
from controller.kube.objects import API_VERSION, HPA_KIND
from controller.kube.ports import EventSink, ObjectKey
from kubecommon.kubetime import format_time
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, KubeError

__all__ = ["COMPONENT", "QUEUE_SIZE", "KubeEventSink", "event_json"]

_log = logging.getLogger(__name__)
COMPONENT = "prom-autoscaler-controller"
QUEUE_SIZE = 1000
_WRITE_ATTEMPTS = 3
_RETRY_PAUSE_SECONDS = 1.0


def event_json(result: Correlated, *, instance: str) -> dict[str, Any]:
    """The core/v1 Event to create for a correlated record."""
    r = result.record
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": result.event_name, "namespace": r.namespace},
        "involvedObject": {"kind": r.kind, "namespace": r.namespace, "name": r.name, "uid": r.uid,
                           "apiVersion": r.api_version},
        "reason": r.reason, "message": r.message, "type": r.type,
        "source": {"component": r.component, **({"host": r.host} if r.host else {})},
        "firstTimestamp": format_time(result.first_timestamp), "lastTimestamp": format_time(result.last_timestamp),
        "count": result.count, "reportingComponent": r.component, "reportingInstance": instance,
    }


class KubeEventSink:
    def __init__(self, client: KubeClient, *, instance: str = "", host: str = "",
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, queue_size: int = QUEUE_SIZE) -> None:
        self._client = client
        self._instance = instance
        self._host = host
        self._clock = clock
        self._sleep = sleep
        self._queue: asyncio.Queue[tuple[EventRecord, float]] = asyncio.Queue(maxsize=queue_size)
        self._correlator = EventCorrelator()
        self._task: asyncio.Task[None] | None = None
        self.written = 0
        self.filtered = 0
        self.dropped = 0
        self.failed = 0

    def emit(self, key: ObjectKey, uid: str, events: Sequence[Event]) -> None:
        now = self._clock()
        api_version = "autoscaling/v2" if key.kind == HPA_KIND else API_VERSION
        for event in events:
            record = EventRecord(kind=key.kind, api_version=api_version, namespace=key.namespace, name=key.name,
                                 uid=uid, type=str(event.type), reason=str(event.reason), message=event.message,
                                 component=COMPONENT, host=self._host)
            try:
                self._queue.put_nowait((record, now))
            except asyncio.QueueFull:
                self.dropped += 1

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="event-sink")

    async def stop(self, *, drain_seconds: float = 2.0) -> None:
        """Write what is queued (up to `drain_seconds`), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._queue.join(), drain_seconds)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            record, at = await self._queue.get()
            try:
                await self._deliver(record, at)
            except Exception:  # a bug here must not end event delivery for the process
                self.failed += 1
                _log.exception("recording event %s for %s/%s failed", record.reason, record.namespace, record.name)
            finally:
                self._queue.task_done()

    async def _deliver(self, record: EventRecord, at: float) -> None:
        result = self._correlator.correlate(record, now=at)
        if result is None:
            self.filtered += 1
            return
        error = ""
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                await self._write(result)
                self.written += 1
                return
            except KubeAPIError as err:
                if err.code == 404 and result.action is Action.PATCH:
                    result = self._correlator.forget(result)  # the Event expired: create it again
                    continue
                error = str(err)
                if err.code < 500 and err.code != 429:
                    break  # the request itself is wrong: retrying cannot help
            except KubeError as err:
                error = str(err)
            if attempt < _WRITE_ATTEMPTS - 1:
                await self._sleep(_RETRY_PAUSE_SECONDS)
        self.failed += 1
        _log.warning("could not record event %s for %s/%s: %s", record.reason, record.namespace, record.name, error)

    async def _write(self, result: Correlated) -> None:
        base = f"/api/v1/namespaces/{result.record.namespace}/events"
        if result.action is Action.CREATE:
            await self._client.post(base, event_json(result, instance=self._instance))
            return
        patch = {"count": result.count, "lastTimestamp": format_time(result.last_timestamp),
                 "message": result.record.message}
        await self._client.patch(f"{base}/{result.event_name}", patch)


def _port_check(client: KubeClient) -> None:
    """mypy proves the real sink satisfies its port."""
    port: EventSink = KubeEventSink(client)
    del port
