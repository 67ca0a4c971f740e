"""One sync of one PromAutoscaler against map-backed ports: what a user sees on the cluster."""

from __future__ import annotations

import asyncio

import pytest

from controller.algorithm import ControllerConfig, complete, decide
from controller.algorithm.pods import PodInfo
from controller.kube.objects import autoscaler_from_object
from controller.kube.ports import TargetRef
from controller.kube.status import history_checkpoint
from controller.kube.times import parse_time
from controller.algorithm.spec import ExternalSamples, FetchFailure, HpaStatus, ScaleTarget, SyncInput
from controller.kube.fake import api_error, conflict_error
from controller.metrics.source import MetricQuery
from controller.preview import decision_document
from controller.report import Result, WriteResult

from tests.unit.controller.world import KEY, NS, World, external, pas_json

DOWN_ONE_POD_PER_10_MIN = {"scaleDown": {"stabilizationWindowSeconds": 0,
                                         "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}}


async def test_scale_up_writes_the_scale_status_and_an_event() -> None:
    w = World()
    w.observe(50_000)  # 50 in total, 10 per replica wanted -> 5
    out = await w.sync()
    assert (out.result, out.scale_write, out.status_write) == (Result.SCALED, WriteResult.SUCCESS, WriteResult.SUCCESS)
    assert w.replicas() == 5
    assert "SuccessfulRescale" in w.events.reasons(KEY)
    assert w.condition("AbleToScale") == (True, "SucceededRescale")


async def test_scale_down_waits_for_the_stabilization_window() -> None:
    w = World()
    w.set_replicas(5)
    w.observe(20_000)  # wants 2
    seen = []
    for _ in range(22):  # every 15 s for 5 min 15 s
        await w.sync()
        seen.append(w.replicas())
        w.now += 15
    assert seen[:20] == [5] * 20, "no scale-down inside the 5 min window"
    assert seen[-1] == 2


async def test_a_failed_metric_blocks_scale_down_and_says_so() -> None:
    w = World(obj_json=pas_json(metrics=[external("queue"), external("lag")]))
    w.set_replicas(5)
    w.observe(10_000, index=0)  # would scale down to 1
    w.answer(FetchFailure(message="the server could not find the metric lag"), index=1)
    w.now += 1000
    for _ in range(3):
        out = await w.sync()
        w.now += 400  # well past the window
    assert w.replicas() == 5 and out.result is Result.BLOCKED and out.failed
    assert w.condition("ScalingActive") == (False, "FailedGetExternalMetric")
    assert {"FailedGetExternalMetric", "FailedComputeMetricsReplicas"} <= set(w.events.reasons(KEY))


async def test_metrics_of_one_object_are_fetched_concurrently() -> None:
    w = World(obj_json=pas_json(metrics=[external("a"), external("b"), external("c")]))
    in_flight, peak = 0, 0

    class Slow:
        async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> ExternalSamples:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0)
            in_flight -= 1
            return ExternalSamples(values=(20_000,))

    w.metrics = Slow()  # type: ignore[assignment]
    w.restart()
    await w.sync()
    assert peak == 3


@pytest.mark.parametrize(
    ("extra", "conflict", "result", "condition", "event"),
    [({"mode": "Preview"}, None, Result.PREVIEW, ("Preview", (True, "PreviewMode")), "PreviewRescale"),
     ({"paused": True}, None, Result.PAUSED, ("Paused", (True, "Paused")), "Paused"),
     ({}, "the target Deployment.apps shop/web is also scaled by HorizontalPodAutoscaler shop/web",
      Result.CONFLICT, ("ScalingActive", (False, "ConflictingAutoscaler")), "ConflictingAutoscaler")],
    ids=["preview", "paused", "conflict"],
)
async def test_gates_write_nothing_to_the_scale(extra: dict[str, object], conflict: str | None, result: Result,
                                                condition: tuple[str, tuple[bool, str]], event: str) -> None:
    w = World(obj_json=pas_json(extra=extra))
    w.observe(80_000)  # wants 8, the scale-up limit allows 6
    out = await w.sync(conflict=conflict)
    assert (out.result, out.scale_write) == (result, WriteResult.NONE)
    assert w.replicas() == 3 and w.scale.updates == []
    assert w.condition(condition[0]) == condition[1]
    assert event in w.events.reasons(KEY)
    assert "SuccessfulRescale" not in w.events.reasons(KEY)
    assert out.report is not None and out.report.decision.desired_replicas == 6, "the decision is still recorded"
    if result is Result.PREVIEW:
        assert w.obj_json["status"]["desiredReplicas"] == 6, "Preview shows what it would scale to"


async def test_unpausing_resumes_scaling_with_an_event() -> None:
    w = World(obj_json=pas_json(extra={"paused": True}))
    w.observe(80_000)
    await w.sync()
    w.obj_json["spec"].pop("paused")
    w.now += 15
    out = await w.sync()
    assert out.result is Result.SCALED and w.replicas() == 6  # scale-up limit: max(2 x 3, 4)
    assert w.events.reasons(KEY).count("Paused") == 1 and "Unpaused" in w.events.reasons(KEY)


@pytest.mark.parametrize(("conflicts", "result", "replicas", "event"),
                         [(2, Result.SCALED, 5, "SuccessfulRescale"), (50, Result.WRITE_FAILED, 3, "FailedRescale")],
                         ids=["409-retried", "409-gave-up"])
async def test_conflicting_scale_writes(conflicts: int, result: Result, replicas: int, event: str) -> None:
    w = World()
    w.scale.conflicts[(NS, "apps", "Deployment", "web")] = conflicts
    w.observe(50_000)
    out = await w.sync()
    assert out.result is result and w.replicas() == replicas
    assert event in w.events.reasons(KEY)
    if result is Result.WRITE_FAILED:
        assert w.condition("AbleToScale") == (False, "FailedUpdateScale") and out.failed


async def test_a_failed_scale_read_never_scales() -> None:
    w = World()
    w.scale.get_errors[(NS, "apps", "Deployment", "web")] = conflict_error("x")
    w.observe(90_000)
    out = await w.sync()
    assert out.result is Result.FAILED_GET_SCALE and w.scale.updates == []
    assert "FailedGetScale" in w.events.reasons(KEY)


async def test_a_steady_autoscaler_writes_its_status_once() -> None:
    w = World()
    w.observe(30_000)  # exactly on target at 3 replicas: every recommendation is 3
    for _ in range(40):  # 10 minutes at 15 s
        await w.sync()
        w.now += 15
    assert len(w.status.writes) == 1, "a checkpoint that only moves timestamps is not written"


async def test_a_held_scale_down_saves_its_history_about_once_a_minute() -> None:
    w = World()
    w.observe(20_000)  # wants 2 of 3; the 5-minute scale-down window holds 3 for 20 syncs
    for _ in range(19):
        await w.sync()
        w.now += 15
    assert w.replicas() == 3
    assert 4 <= len(w.status.writes) <= 2 * 5 + 1


async def test_a_longer_checkpoint_interval_saves_history_less_often() -> None:
    async def writes(interval: float) -> int:
        w = World(checkpoint_interval=interval)
        w.observe(20_000)  # held scale-down: the recommendations differ from the replicas
        for _ in range(19):
            await w.sync()
            w.now += 15
        return len(w.status.writes)

    assert await writes(300.0) < await writes(60.0)


async def test_a_shorter_checkpoint_interval_saves_history_more_often() -> None:
    w = World(checkpoint_interval=3.0)
    w.observe(20_000)  # held scale-down: the recommendations differ from the replicas
    for _ in range(20):  # one minute at 3 s
        await w.sync()
        w.now += 3
    assert len(w.status.writes) >= 15


UP_WINDOW_2_MIN = {"scaleUp": {"stabilizationWindowSeconds": 120}}


@pytest.mark.parametrize(("behavior", "load", "restart_at"), [
    pytest.param(None, [30_000] * 12 + [10_000] * 30, 12, id="steady-then-drop"),
    pytest.param(None, [30_000] * 30 + [10_000] * 30, 30, id="long-steady-then-drop"),
    pytest.param(None, [20_000] * 10 + [10_000] * 30, 10, id="held-scale-down"),
    pytest.param(UP_WINDOW_2_MIN, [30_000] * 8 + [60_000] * 20, 14, id="scale-up-window-running"),
    pytest.param(DOWN_ONE_POD_PER_10_MIN, [50_000] * 4 + [10_000] * 50, 30, id="scale-down-rate-limit"),
])
async def test_skipped_checkpoints_lose_nothing_a_restart_needs(behavior: dict[str, object] | None,
                                                                load: list[int], restart_at: int) -> None:
    """A restart from the status this controller left decides exactly as a restart from a
    checkpoint of its whole in-memory history taken at that moment."""

    async def replicas_over_time(checkpoint_first: bool) -> list[int]:
        w = World(obj_json=pas_json(behavior=behavior))
        seen = []
        for k, total in enumerate(load):
            if k == restart_at:
                assert w.reconciler is not None
                report = w.reconciler.last_report(KEY)
                assert report is not None and report.decision.history is not None
                if checkpoint_first:
                    w.obj_json["status"]["scaleHistory"] = history_checkpoint(report.decision.history, w.now)
                w.restart()
            w.observe(total)
            await w.sync()
            seen.append(w.replicas())
            w.now += 15
        return seen

    left, full = await replicas_over_time(False), await replicas_over_time(True)
    assert left == full
    assert len(set(full)) > 1, "the load scales the target after the restart"


async def test_a_standby_writes_nothing() -> None:
    w = World(leader=False)
    w.observe(50_000)
    out = await w.sync()
    assert out.result is Result.NOT_LEADER
    assert w.scale.updates == [] and w.status.writes == [] and w.events.recorded == []


async def test_restored_checkpoint_prevents_an_early_scale_down_after_restart() -> None:
    def run() -> World:
        w = World(obj_json=pas_json(behavior=DOWN_ONE_POD_PER_10_MIN))
        w.set_replicas(5)
        w.observe(10_000)  # wants 1; the policy allows one pod per 10 min
        return w

    w = run()
    await w.sync()
    assert w.replicas() == 4 and "scaleHistory" in w.obj_json["status"]
    w.now += 60
    w.restart()
    await w.sync()
    assert w.replicas() == 4, "the scale-down event from a minute ago still counts"
    assert w.events.reasons(KEY).count("StateRestored") == 1
    w.now += 15
    await w.sync()
    assert w.events.reasons(KEY).count("StateRestored") == 1, "announced once"

    amnesiac = run()
    await amnesiac.sync()
    amnesiac.now += 60
    amnesiac.obj_json["status"].pop("scaleHistory")
    amnesiac.restart()
    await amnesiac.sync()
    assert amnesiac.replicas() == 3, "without the checkpoint the policy budget starts fresh (upstream)"


async def test_checkpoint_all_saves_unsaved_history() -> None:
    w = World()
    w.observe(20_000)
    await w.sync()
    w.now += 15
    await w.sync()
    before = len(w.status.writes)
    assert w.reconciler is not None
    assert await w.reconciler.checkpoint_all() == 1
    assert len(w.status.writes) == before + 1
    assert await w.reconciler.checkpoint_all() == 0


async def test_reconcile_gives_the_same_counts_as_the_algorithm() -> None:
    totals = [20, 50, 90, 90, 60, 30, 10, 10, 10, 5, 5, 5, 70, 200, 40, 10] + [10] * 30
    w = World(obj_json=pas_json(max_replicas=15))
    via_reconcile = []
    for total in totals:
        w.observe(total * 1000)
        await w.sync()
        via_reconcile.append(w.replicas())
        w.now += 15

    spec = w.autoscaler.spec
    now, current, status, history = World().now, 3, HpaStatus(), None
    direct = []
    for total in totals:
        d = decide(SyncInput(spec=spec, scale=ScaleTarget(spec_replicas=current, status_replicas=current), now=now,
                             status=status, observations=(ExternalSamples(values=(total * 1000,)),),
                             history=history), ControllerConfig())
        if d.write:
            d = complete(d, write_error=None, now=now)
            current = d.desired_replicas
        status, history = d.status, d.history
        direct.append(current)
        now += 15
    assert via_reconcile == direct
    assert max(direct) > 2 and direct[-1] < max(direct), "the sequence scales both ways"


async def test_a_previewed_native_hpa_is_decided_but_nothing_is_written_or_announced() -> None:
    hpa = pas_json()
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", "HorizontalPodAutoscaler"
    hpa["status"] = {"currentReplicas": 3, "desiredReplicas": 3}
    w = World(obj_json=hpa)
    w.observe(80_000)
    out = await w.sync()
    assert out.result is Result.PREVIEW
    assert w.scale.updates == [] and w.status.writes == [] and w.events.recorded == []
    assert out.report is not None and out.report.decision.desired_replicas == 6
    doc = decision_document(out.report)
    assert (doc["hpaDesiredReplicas"], doc["lastDecision"]["desiredReplicas"], doc["writesScale"]) == (3, 6, False)


async def test_regained_leadership_restores_history_from_status() -> None:
    w = World(obj_json=pas_json(behavior=DOWN_ONE_POD_PER_10_MIN))
    w.set_replicas(5)
    w.observe(10_000)
    await w.sync()
    assert w.replicas() == 4
    assert w.reconciler is not None
    w.reconciler.forget_all()  # lost the Lease, then won it back
    w.now += 60
    await w.sync()
    assert w.replicas() == 4, "the scale-down a minute ago still counts against the policy"
    assert w.events.reasons(KEY).count("StateRestored") == 1


async def test_two_autoscalers_selecting_the_same_pods_are_ambiguous() -> None:
    w = World()
    for i in range(3):
        w.pods.add(NS, PodInfo(name=f"web-{i}"), {"app": "web"})
    w.scale.set(NS, TargetRef(api_version="apps/v1", kind="Deployment", name="web2"), replicas=3, selector="app=web")
    other = pas_json()
    other["metadata"] = {**other["metadata"], "name": "web2", "uid": "uid-web2"}
    other["spec"]["scaleTargetRef"]["name"] = "web2"
    w.observe(80_000)
    assert (await w.sync()).result is Result.SCALED, "alone, it scales"
    assert w.reconciler is not None
    out = await w.reconciler.sync(autoscaler_from_object(other))
    assert out.result is Result.BLOCKED and out.error is not None
    assert "pods by selector app=web are controlled by multiple HPAs: [shop/web shop/web2]" in out.error
    w.reconciler.forget(out.key)  # web2 deleted
    w.now += 15
    assert (await w.sync()).result is not Result.BLOCKED


@pytest.mark.parametrize(("paused_before", "paused_after", "expected"), [
    pytest.param(True, True, [], id="still-paused-after-restart-is-not-announced-again"),
    pytest.param(True, False, ["Unpaused"], id="unpaused-while-the-controller-was-down"),
    pytest.param(False, True, ["Paused"], id="paused-while-the-controller-was-down"),
    pytest.param(False, False, [], id="never-paused"),
])
@pytest.mark.parametrize("how", ["restart", "leadership-regained"])
async def test_pause_events_after_a_restart_follow_the_status_not_the_memory(
        paused_before: bool, paused_after: bool, expected: list[str], how: str) -> None:
    w = World(obj_json=pas_json(extra={"paused": True} if paused_before else {}))
    w.observe(30_000)
    await w.sync()
    w.obj_json["spec"]["paused"] = paused_after
    if how == "restart":
        w.restart()
    else:
        assert w.reconciler is not None
        w.reconciler.forget_all()
    w.events.recorded.clear()
    w.now += 15
    await w.sync()
    assert [r for r in w.events.reasons(KEY) if r in ("Paused", "Unpaused")] == expected


async def test_a_conflict_keeps_the_condition_order_and_its_transition_time() -> None:
    w = World()
    w.observe(30_000)  # on target at 3 replicas: nothing else changes between syncs
    await w.sync()
    order = [c["type"] for c in w.obj_json["status"]["conditions"]]
    assert order == ["AbleToScale", "ScalingActive", "ScalingLimited", "Paused"]
    conflict = "the target Deployment.apps shop/web is also scaled by HorizontalPodAutoscaler shop/web"
    w.now += 15
    await w.sync(conflict=conflict)
    started = w.now
    writes = len(w.status.writes)
    for _ in range(3):
        w.now += 15
        await w.sync(conflict=conflict)
        assert [c["type"] for c in w.obj_json["status"]["conditions"]] == order
    assert len(w.status.writes) == writes, "an unchanged conflict rewrites nothing"
    active = next(c for c in w.obj_json["status"]["conditions"] if c["type"] == "ScalingActive")
    assert (active["reason"], parse_time(active["lastTransitionTime"])) == ("ConflictingAutoscaler", started)
    w.now += 15
    await w.sync()
    assert [c["type"] for c in w.obj_json["status"]["conditions"]] == order
    assert w.condition("ScalingActive") == (True, "ValidMetricFound")
    active = next(c for c in w.obj_json["status"]["conditions"] if c["type"] == "ScalingActive")
    assert parse_time(active["lastTransitionTime"]) == w.now


NOT_FOUND = 'deployments.apps "web" not found'
FORBIDDEN = ('deployments.apps "web" is forbidden: User "system:serviceaccount:kube-system:prom-autoscaler" '
             'cannot update resource "deployments/scale" in API group "apps" in the namespace "shop"')
MODIFIED = ('Operation cannot be fulfilled on promautoscalers.autoscaling.prom.dev "web": the object has been '
            'modified; please apply your changes to the latest version and try again')


@pytest.mark.parametrize(("failing", "reason", "message", "condition"), [
    pytest.param("get", "FailedGetScale", NOT_FOUND,
                 ("AbleToScale", f"the HPA controller was unable to get the target's current scale: {NOT_FOUND}"),
                 id="get-scale"),
    pytest.param("update", "FailedRescale", f"New size: 5; reason: external metric queue(nil) above target; "
                 f"error: {FORBIDDEN}",
                 ("AbleToScale", f"the HPA controller was unable to update the target scale: {FORBIDDEN}"),
                 id="rescale"),
    pytest.param("status", "FailedUpdateStatus", MODIFIED, None, id="update-status"),
])
async def test_api_errors_read_in_events_and_conditions_as_the_api_server_words_them(
        failing: str, reason: str, message: str, condition: tuple[str, str] | None) -> None:
    """Upstream puts the Status message there (client-go's error text), not our request line."""
    w = World()
    target = (NS, "apps", "Deployment", "web")
    if failing == "get":
        w.scale.get_errors[target] = api_error(404, "NotFound", NOT_FOUND, path="/apis/apps/v1/x/scale")
    elif failing == "update":
        w.scale.update_errors[target] = api_error(403, "Forbidden", FORBIDDEN, method="PUT", path="/x/scale")
    w.observe(50_000)
    if failing == "status":
        w.status.errors[KEY] = api_error(409, "Conflict", MODIFIED, method="PATCH", path="/x/status")
    await w.sync()
    assert [r.event.message for r in w.events.recorded if r.event.reason == reason] == [message]
    if condition is not None:
        kind, text = condition
        assert [c["message"] for c in w.obj_json["status"]["conditions"] if c["type"] == kind] == [text]


FAST_RETRIES = [0.005 * 2 ** k for k in range(11)]  # client-go's default per-item backoff: ~10 s in all


@pytest.mark.parametrize(("gaps", "expected"), [
    pytest.param([15.0] * 4, 5, id="every-period-like-upstream"),
    pytest.param([14.8, 15.2, 14.9, 15.0], 5, id="every-period-with-jitter"),
    pytest.param(FAST_RETRIES, 2, id="fast-retries-within-ten-seconds"),
    pytest.param(FAST_RETRIES + [15.0, 15.0], 4, id="fast-retries-then-every-period"),
])
async def test_a_failing_autoscaler_announces_its_failure_about_once_a_period(gaps: list[float],
                                                                             expected: int) -> None:
    """Upstream syncs a failing HPA once a period and records its Warning each time. Retrying
    sooner must not multiply the Warnings: they would use up the object's event budget (25, then
    one per 5 minutes) and the SuccessfulRescale after the recovery would be dropped."""
    w = World()
    w.scale.get_errors[(NS, "apps", "Deployment", "web")] = api_error(404, "NotFound", NOT_FOUND)
    await w.sync()
    for gap in gaps:
        w.now += gap
        await w.sync()
    assert w.events.reasons(KEY).count("FailedGetScale") == expected


async def test_a_failure_that_comes_back_after_a_quiet_retry_is_announced_again() -> None:
    w = World()
    target = (NS, "apps", "Deployment", "web")
    w.observe(30_000)  # on target: a successful sync emits nothing
    w.scale.get_errors[target] = api_error(404, "NotFound", NOT_FOUND)
    await w.sync()
    del w.scale.get_errors[target]
    w.now += 0.005
    await w.sync()
    w.scale.get_errors[target] = api_error(404, "NotFound", NOT_FOUND)
    w.now += 0.01
    await w.sync()
    assert w.events.reasons(KEY).count("FailedGetScale") == 2


async def test_the_echoed_status_replaces_the_written_copy_so_each_status_is_held_once() -> None:
    w = World()
    w.observe(30_000)
    lagging = w.autoscaler  # the cache before our write came back
    await w.sync()
    state = w.reconciler._states[KEY]
    written = state.written
    assert written is not None and written is not lagging.status_json
    w.obj_json["metadata"] = {**w.obj_json["metadata"], "resourceVersion": "echo-1"}
    echoed = w.autoscaler  # the watch delivered our write back, equal
    out = await w.reconciler.sync(echoed)
    assert out.status_write is WriteResult.NONE
    assert state.written is echoed.status_json, "the cache's copy is kept, not a second one"
    await w.reconciler.sync(lagging)  # an older cached status still compares against what was written
    assert state.written is echoed.status_json and len(w.status.writes) == 1
