"""The map-backed port fakes behave as reconcile will observe the real ones (the scale client's
reads, writes and 409 retries: test_scale_contract.py, on the fake and the real client alike)."""

import pytest

from controller.algorithm.conditions import Event, EventReason, EventType
from controller.algorithm.pods import PodInfo
from controller.kube.fake import FakeEventSink, FakePodLister, FakeScaleClient, FakeStatusWriter, api_error
from controller.kube.ports import ObjectKey, TargetRef
from kubecommon.kube.errors import KubeAPIError, UnknownKind
from kubecommon.selectors import SelectorError

WEB = TargetRef(api_version="apps/v1", kind="Deployment", name="web")
KEY = ObjectKey(kind="PromAutoscaler", namespace="shop", name="web")


async def test_scale_get_version_is_ignored_and_unknown_kinds_fail():
    scales = FakeScaleClient()
    scales.set("shop", WEB, replicas=3)
    stale = TargetRef(api_version="apps/v1beta1", kind="Deployment", name="web")
    assert (await scales.get("shop", stale)).spec_replicas == 3
    with pytest.raises(UnknownKind):
        await scales.get("shop", TargetRef(api_version="example.com/v1", kind="Widget", name="w"))
    with pytest.raises(KubeAPIError, match="404"):
        await scales.get("shop", TargetRef(api_version="apps/v1", kind="Deployment", name="db"))


@pytest.mark.parametrize(("selector", "want"), [
    pytest.param("app=web", ["web-0", "web-1"], id="equality"),
    pytest.param("app in (web,db),tier!=canary", ["web-0", "db-0"], id="set-based"),
    pytest.param("", ["web-0", "web-1", "db-0"], id="everything"),
])
def test_pod_lister_matches_selectors(selector, want):
    lister = FakePodLister()
    lister.add("shop", PodInfo(name="web-0"), {"app": "web"})
    lister.add("shop", PodInfo(name="web-1"), {"app": "web", "tier": "canary"})
    lister.add("shop", PodInfo(name="db-0"), {"app": "db"})
    lister.add("other", PodInfo(name="web-9"), {"app": "web"})
    assert sorted(p.name for p in lister.pods("shop", selector)) == sorted(want)


def test_pod_lister_rejects_bad_selectors():
    with pytest.raises(SelectorError):
        FakePodLister().pods("shop", "app in (")


async def test_status_writer_keeps_last_status_and_skips_gone_objects():
    writer = FakeStatusWriter()
    await writer.write(KEY, {"desiredReplicas": 2})
    await writer.write(KEY, {"desiredReplicas": 3})
    assert writer.statuses[KEY] == {"desiredReplicas": 3} and writer.writes == [KEY, KEY]
    writer.gone.add(KEY)
    await writer.write(KEY, {"desiredReplicas": 4})
    assert writer.statuses[KEY] == {"desiredReplicas": 3}
    writer.errors[KEY] = api_error(409, "Conflict", "modified")
    with pytest.raises(KubeAPIError):
        await writer.write(KEY, {})


def test_event_sink_records_in_order():
    sink = FakeEventSink()
    sink.emit(KEY, "u1", [Event(type=EventType.NORMAL, reason=EventReason.SUCCESSFUL_RESCALE, message="New size: 3"),
                          Event(type=EventType.WARNING, reason=EventReason.FAILED_RESCALE, message="x")])
    assert sink.reasons(KEY) == ["SuccessfulRescale", "FailedRescale"]
