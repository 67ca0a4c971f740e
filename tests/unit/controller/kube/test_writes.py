"""KubeStatusWriter and KubeEventSink against the in-process API server."""

import asyncio

import pytest

from controller.algorithm.conditions import Event, EventReason, EventType
from controller.kube.events import COMPONENT, KubeEventSink
from controller.kube.ports import ObjectKey
from controller.kube.status_writer import KubeStatusWriter
from kubecommon.kube.errors import KubeAPIError

from .apiserver import EVENTS

KEY = ObjectKey(kind="PromAutoscaler", namespace="shop", name="web")
PAS = "/apis/autoscaling.prom-autoscaler.io/v1alpha1/promautoscalers"  # the collection, as the server keys it
RESCALE = Event(type=EventType.NORMAL, reason=EventReason.SUCCESSFUL_RESCALE,
                message="New size: 4; reason: cpu resource utilization (percentage of request) above target")


async def test_status_is_replaced_whole(writes):
    writes.put(PAS, {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"maxReplicas": 5}})
    writer = KubeStatusWriter(writes.client)
    await writer.write(KEY, {"desiredReplicas": 3, "lastScaleTime": "2026-11-25T12:00:00Z"})
    await writer.write(KEY, {"desiredReplicas": 4})
    stored = writes.get(PAS, "shop", "web")
    assert stored["status"] == {"desiredReplicas": 4}  # lastScaleTime gone, not merged
    assert stored["spec"] == {"maxReplicas": 5}  # only the status is written
    assert writer.written == 2


@pytest.mark.parametrize(("code", "raises"), [
    pytest.param(404, False, id="deleted-object-is-not-an-error"),
    pytest.param(409, True, id="conflict-propagates"),
    pytest.param(500, True, id="server-error-propagates"),
])
async def test_status_write_errors(writes, code, raises):
    writer = KubeStatusWriter(writes.client)
    writes.status_codes.append(code)
    if raises:
        with pytest.raises(KubeAPIError):
            await writer.write(KEY, {"desiredReplicas": 3})
    else:
        await writer.write(KEY, {"desiredReplicas": 3})
        assert writer.gone == 1 and writes.get(PAS, "shop", "web") is None


class Clock:
    def __init__(self):
        self.now = 1_795_608_000.0

    def __call__(self):
        return self.now


async def no_sleep(_seconds):
    return None


async def drained(sink):
    await asyncio.wait_for(sink._queue.join(), 1.5)


async def test_events_are_created_then_counted(writes):
    clock = Clock()
    sink = KubeEventSink(writes.client, instance="pod-1", clock=clock, sleep=no_sleep)
    sink.start()
    try:
        sink.emit(KEY, "uid-1", [RESCALE])
        clock.now += 15
        sink.emit(KEY, "uid-1", [RESCALE])
        await drained(sink)
    finally:
        await sink.stop()
    (event,) = writes.events()
    assert event["involvedObject"] == {"kind": "PromAutoscaler", "namespace": "shop", "name": "web", "uid": "uid-1",
                                       "apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1"}
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "SuccessfulRescale", RESCALE.message)
    assert (event["source"], event["reportingComponent"], event["reportingInstance"]) == (
        {"component": COMPONENT}, COMPONENT, "pod-1")
    assert (event["count"], event["firstTimestamp"], event["lastTimestamp"]) == (
        2, "2026-11-25T12:00:00Z", "2026-11-25T12:00:15Z")
    assert [c.split(" ")[0] for c in writes.calls] == ["POST", "PATCH"]
    assert (sink.written, sink.failed, sink.dropped) == (2, 0, 0)


async def test_emit_never_blocks_and_counts_overflow(writes):
    sink = KubeEventSink(writes.client, queue_size=3, sleep=no_sleep)
    sink.emit(KEY, "u", [RESCALE] * 5)  # not started: the queue fills, the caller is not held up
    assert sink.dropped == 2
    sink.start()
    await drained(sink)
    await sink.stop()
    assert len(writes.events()) == 1 and sink.written == 3


async def test_expired_event_is_created_again(writes):
    clock = Clock()
    sink = KubeEventSink(writes.client, clock=clock, sleep=no_sleep)
    sink.start()
    try:
        sink.emit(KEY, "u", [RESCALE])
        await drained(sink)
        for event in writes.events():  # the API server's event TTL removed it
            writes.delete(EVENTS, event["metadata"]["namespace"], event["metadata"]["name"])
        clock.now += 4000
        sink.emit(KEY, "u", [RESCALE])
        await drained(sink)
    finally:
        await sink.stop()
    (event,) = writes.events()
    assert event["count"] == 1 and sink.failed == 0


@pytest.mark.parametrize(("codes", "written", "failed"), [
    pytest.param([500], 1, 0, id="server-error-retried"),
    pytest.param([500, 500, 500], 0, 1, id="gives-up-after-three"),
    pytest.param([403], 0, 1, id="forbidden-not-retried"),
])
async def test_write_failures(writes, codes, written, failed):
    sink = KubeEventSink(writes.client, sleep=no_sleep)
    writes.event_codes.extend(codes)
    sink.start()
    sink.emit(KEY, "u", [RESCALE])
    await drained(sink)
    await sink.stop()
    assert (sink.written, sink.failed) == (written, failed)


async def test_spam_is_filtered(writes):
    sink = KubeEventSink(writes.client, sleep=no_sleep)
    sink.start()
    sink.emit(KEY, "u", [Event(type=EventType.WARNING, reason=EventReason.FAILED_GET_PODS_METRIC, message=f"m{i}")
                         for i in range(40)])
    await drained(sink)
    await sink.stop()
    assert sink.written == 25 and sink.filtered == 15
