"""The controller's /metrics read like upstream's HPA controller metrics, so HPA dashboards and
queries carry over with the metric prefix changed:

* `reconciliations_total` and `reconciliation_duration_seconds` carry upstream's `action`
  (scale_up/scale_down/none) and `error` (spec/internal/none) next to our `kind` and `result`;
* `metric_computation_total{action,error,metric_type}` counts each metric of each sync;
* client-go's workqueue names (`workqueue_depth`, `_adds_total`, `_queue_duration_seconds`,
  `_work_duration_seconds`, `_retries_total`, label `name="promautoscaler"`, upstream's buckets)
  and its stuck-worker gauges `_unfinished_work_seconds` and `_longest_running_processor_seconds`,
  and its leader-election gauge `leader_election_master_status{name=<lease>}`;
* per autoscaler, each metric's current value next to its target (as `kubectl get hpa` shows
  them), the min/max bounds, all removed with the object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from controller.algorithm.spec import ControllerConfig, ExternalSamples
from controller.reconcile import InvalidAutoscaler
from controller.report import SyncOutcome
from controller.run.queue import Due, DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from controller.run.workers import WorkerPool
from controller.http_server import build_http_app
from controller.telemetry import ControllerTelemetry

from tests.unit.controller.world import KEY, NS, World, external, pas_json

P = "prom_autoscaler_controller_"


def samples(telemetry: ControllerTelemetry, name: str) -> dict[frozenset[tuple[str, str]], float]:
    out: dict[frozenset[tuple[str, str]], float] = {}
    for family in text_string_to_metric_families(telemetry.exposition().decode()):
        for s in family.samples:
            if s.name == name:
                out[frozenset(s.labels.items())] = s.value
    return out


def labelled(telemetry: ControllerTelemetry, name: str, *keep: str) -> dict[tuple[str, ...], float]:
    """`name`'s non-zero samples by the values of the labels `keep`."""
    out: dict[tuple[str, ...], float] = {}
    for labels, value in samples(telemetry, name).items():
        if value:
            d = dict(labels)
            key = tuple(d.get(k, "") for k in keep)
            out[key] = out.get(key, 0.0) + value
    return out


async def scaled_up(w: World) -> SyncOutcome:
    w.observe(80_000)  # 3 -> 8
    return await w.sync()


async def scaled_down(w: World) -> SyncOutcome:
    w.config = ControllerConfig(downscale_stabilization=0.0)
    w.restart()
    w.observe(10_000)  # 3 -> 1
    return await w.sync()


async def unchanged(w: World) -> SyncOutcome:
    w.observe(30_000)
    return await w.sync()


async def metric_unreadable(w: World) -> SyncOutcome:
    return await w.sync()  # no answer for the External metric


async def conflicting(w: World) -> SyncOutcome:
    w.observe(80_000)
    return await w.sync(conflict="HorizontalPodAutoscaler shop/other targets Deployment web")


async def invalid_spec(w: World) -> SyncOutcome:
    assert w.reconciler is not None
    bad = InvalidAutoscaler(key=KEY, uid="uid-web", generation=1, spec_json={}, status_json={},
                            error="spec.maxReplicas: must be >= minReplicas")
    return await w.reconciler.sync_invalid(bad)


Sync = Callable[[World], Awaitable[SyncOutcome]]

# (a sync, upstream's action and error labels)
UPSTREAM_LABELS = [
    pytest.param(scaled_up, "scale_up", "none", id="scaled up"),
    pytest.param(scaled_down, "scale_down", "none", id="scaled down"),
    pytest.param(unchanged, "none", "none", id="nothing to do"),
    pytest.param(metric_unreadable, "none", "internal", id="metric unreadable: internal error"),
    pytest.param(conflicting, "scale_up", "spec", id="two autoscalers on one target: spec error"),
    pytest.param(invalid_spec, "none", "spec", id="invalid spec: spec error"),
]


@pytest.mark.parametrize(("sync", "action", "error"), UPSTREAM_LABELS)
async def test_syncs_carry_upstreams_action_and_error(sync: Sync, action: str, error: str) -> None:
    w, telemetry = World(), ControllerTelemetry()
    telemetry.observe_sync(await sync(w), 0.003)
    assert labelled(telemetry, P + "reconciliations_total", "action", "error") == {(action, error): 1.0}
    assert labelled(telemetry, P + "reconciliation_duration_seconds_count", "action", "error") == {
        (action, error): 1.0}
    assert samples(telemetry, P + "reconciliation_duration_seconds_bucket")  # upstream's 1 ms x2 buckets
    les = {dict(labels)["le"] for labels in samples(telemetry, P + "reconciliation_duration_seconds_bucket")}
    assert les == {str(0.001 * 2**i) for i in range(15)} | {"+Inf"}


async def test_each_metric_of_a_sync_is_counted_by_type_and_error() -> None:
    w = World(obj_json=pas_json(metrics=[external("queue"), external("lag")]))
    telemetry = ControllerTelemetry()
    w.observe(80_000, index=0)  # "lag" is not answered
    telemetry.observe_sync(await w.sync(), 0.01)
    assert labelled(telemetry, P + "metric_computation_total", "action", "error", "metric_type") == {
        ("scale_up", "none", "External"): 1.0, ("scale_up", "internal", "External"): 1.0}


def per_object(telemetry: ControllerTelemetry, name: str) -> dict[tuple[str, ...], float]:
    keys = ("namespace", "name", "metric_name", "metric_type", "target_type")
    return {tuple(dict(lb).get(k, "") for k in keys): v for lb, v in samples(telemetry, name).items()}


async def test_metric_value_next_to_target_and_bounds_are_forgotten_with_the_object() -> None:
    w = World(obj_json=pas_json(metrics=[external("queue", average="10"), external("lag", average="500m")],
                                min_replicas=2, max_replicas=12))
    telemetry = ControllerTelemetry()
    w.observe(45_000, index=0)  # 45 over 3 pods: 15 a pod
    w.answer(ExternalSamples(values=(900,)), index=1)  # 0.9 over 3 pods: 0.3 a pod
    telemetry.observe_sync(await w.sync(), 0.01)
    queue = (NS, "web", "queue", "External", "AverageValue")
    lag = (NS, "web", "lag", "External", "AverageValue")
    assert per_object(telemetry, P + "metric_value") == {queue: 15.0, lag: 0.3}
    assert per_object(telemetry, P + "metric_target") == {queue: 10.0, lag: 0.5}
    assert labelled(telemetry, P + "min_replicas", "name") == {("web",): 2.0}
    assert labelled(telemetry, P + "max_replicas", "name") == {("web",): 12.0}

    w.metrics.forget(NS, w.query(1))  # "lag" unreadable now: its value is unknown, not the old one
    telemetry.observe_sync(await w.sync(), 0.01)
    assert set(per_object(telemetry, P + "metric_value")) == {queue}
    assert set(per_object(telemetry, P + "metric_target")) == {queue, lag}

    telemetry.forget_object(KEY)
    for name in ("metric_value", "metric_target", "min_replicas", "max_replicas", "desired_replicas",
                 "current_replicas"):
        assert samples(telemetry, P + name) == {}, name


async def test_an_edited_spec_leaves_no_series_of_a_removed_metric() -> None:
    w = World(obj_json=pas_json(metrics=[external("queue"), external("lag")]))
    telemetry = ControllerTelemetry()
    w.observe(30_000, index=0)
    w.observe(30_000, index=1)
    telemetry.observe_sync(await w.sync(), 0.01)
    w.obj_json = pas_json(metrics=[external("queue")], generation=2)
    w.observe(30_000, index=0)
    telemetry.observe_sync(await w.sync(), 0.01)
    names = {dict(lb)["metric_name"] for lb in samples(telemetry, P + "metric_target")}
    assert names == {"queue"}


async def test_a_replica_that_stops_leading_shows_no_autoscaler_series() -> None:
    """Only the leader decides: a standby's old per-object numbers would sit next to the new
    leader's (another pod label) and keep MaxedOut firing or hide an unreadable metric."""
    w, telemetry = World(), ControllerTelemetry()
    telemetry.set_leader(True)
    w.observe(30_000)
    telemetry.observe_sync(await w.sync(), 0.01)
    assert samples(telemetry, P + "metric_value") and samples(telemetry, P + "desired_replicas")
    telemetry.set_leader(False)
    for name in ("metric_value", "metric_target", "min_replicas", "max_replicas", "desired_replicas",
                 "current_replicas"):
        assert samples(telemetry, P + name) == {}, name
    telemetry.observe_sync(await w.sync(), 0.01)  # leading again: shown again
    assert samples(telemetry, P + "desired_replicas")


WORKQUEUE_BUCKETS = {repr(float(f"1e{e}")) for e in range(-8, 4)} | {"+Inf"}  # client-go: 10 ns x10, 12


async def test_client_go_workqueue_and_leader_election_names() -> None:
    telemetry = ControllerTelemetry(lease_name="prom-autoscaler-controller")
    telemetry.set_leader(True)
    telemetry.observe_start(Due(key=KEY, due=10.0, started=10.25))  # a quarter second late
    w = World()
    w.observe(30_000)
    telemetry.observe_sync(await w.sync(), 0.02)
    telemetry.observe_start(Due(key=KEY, due=40.0, started=40.0))
    w.metrics.forget(NS, w.query())
    telemetry.observe_sync(await w.sync(), 0.01)  # failed: retried sooner
    app = build_http_app(telemetry, ready=lambda: None, healthy=lambda: None, decision=lambda *_: None,
                         queue_depth=lambda: 3)  # fmt: skip
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/metrics")).status == 200
    queue = frozenset({("name", "promautoscaler")})
    assert samples(telemetry, "workqueue_depth") == {queue: 3.0}
    assert samples(telemetry, "workqueue_adds_total") == {queue: 2.0}
    assert samples(telemetry, "workqueue_retries_total") == {queue: 1.0}
    assert samples(telemetry, "workqueue_queue_duration_seconds_sum") == {queue: 0.25}
    assert samples(telemetry, "workqueue_work_duration_seconds_count") == {queue: 2.0}
    les = {dict(lb)["le"] for lb in samples(telemetry, "workqueue_queue_duration_seconds_bucket")}
    assert les == WORKQUEUE_BUCKETS
    lease = frozenset({("name", "prom-autoscaler-controller")})
    assert samples(telemetry, "leader_election_master_status") == {lease: 1.0}
    telemetry.set_leader(False)
    assert samples(telemetry, "leader_election_master_status") == {lease: 0.0}


async def test_a_stuck_sync_shows_in_client_go_unfinished_work_gauges() -> None:
    """client-go's alert for a hung worker: the seconds the syncs in progress have run (summed, and
    the longest), read from the worker pool at scrape; back to 0 once they finish."""
    now = [100.0]
    queue: DueQueue[str] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: now[0]))
    release = asyncio.Event()

    async def stuck(_: str) -> bool:
        await release.wait()
        return True

    pool = WorkerPool(queue, stuck, concurrency=2, clock=lambda: now[0])
    telemetry = ControllerTelemetry()
    app = build_http_app(telemetry, ready=lambda: None, healthy=lambda: None, decision=lambda *_: None,
                         queue_depth=lambda: 0, running_seconds=pool.running_seconds)  # fmt: skip
    queue.add("a", uid="a", period=15.0, now=now[0], immediate=True)
    assert pool.start_due() == 1
    now[0] += 30.0
    queue.add("b", uid="b", period=15.0, now=now[0], immediate=True)
    assert pool.start_due() == 1
    now[0] += 12.0
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/metrics")).status == 200
        name = frozenset({("name", "promautoscaler")})
        assert samples(telemetry, "workqueue_unfinished_work_seconds") == {name: 42.0 + 12.0}
        assert samples(telemetry, "workqueue_longest_running_processor_seconds") == {name: 42.0}
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert (await client.get("/metrics")).status == 200
        assert samples(telemetry, "workqueue_unfinished_work_seconds") == {name: 0.0}
        assert samples(telemetry, "workqueue_longest_running_processor_seconds") == {name: 0.0}


def test_no_leader_election_gauge_without_election() -> None:
    assert samples(ControllerTelemetry(), "leader_election_master_status") == {}


async def test_an_autoscaler_whose_spec_became_invalid_shows_no_old_numbers() -> None:
    """Its last decision's replicas and metric values would read as current (and keep MaxedOut
    firing, or hide that nothing is read any more)."""
    w, telemetry = World(), ControllerTelemetry()
    w.observe(30_000)
    telemetry.observe_sync(await w.sync(), 0.01)
    assert samples(telemetry, P + "metric_value")
    telemetry.observe_sync(await invalid_spec(w), 0.01)
    for name in ("metric_value", "metric_target", "min_replicas", "max_replicas", "desired_replicas",
                 "current_replicas"):
        assert samples(telemetry, P + name) == {}, name


async def test_delay_ratio_per_autoscaler_as_kep_6003_proposes() -> None:
    """`reconciliation_delay_ratio`: how much longer than its period a regular sync waited,
    (period + lateness) / period; not for the first sync, nor one after a spec change or a failure
    (those were not asked for a period ahead); gone with the object."""
    w = World(obj_json=pas_json(extra={"syncPeriodSeconds": 20}))
    telemetry = ControllerTelemetry()
    name = P + "reconciliation_delay_ratio"

    async def sync(due: float, started: float) -> None:
        telemetry.observe_start(Due(key=KEY, due=due, started=started))
        telemetry.observe_sync(await w.sync(), 0.5)

    w.observe(30_000)
    await sync(100.0, 100.0)
    assert samples(telemetry, name) == {}, "the first sync has no period behind it"
    await sync(120.0, 120.0)
    assert labelled(telemetry, name, "name") == {("web",): 1.0}
    await sync(140.0, 144.0)  # 4 s late on a 20 s period
    assert labelled(telemetry, name, "name") == {("web",): 1.2}
    w.obj_json = pas_json(extra={"syncPeriodSeconds": 20}, generation=2, max_replicas=9)
    await sync(150.0, 151.0)  # a spec change: synced at once, not a period's wait
    assert labelled(telemetry, name, "name") == {("web",): 1.2}
    w.metrics.forget(NS, w.query())
    await sync(160.0, 160.0)  # on time, but it fails: the next one is a retry
    await sync(161.0, 163.0)
    assert labelled(telemetry, name, "name") == {("web",): 1.0}
    telemetry.forget_object(KEY)
    assert samples(telemetry, name) == {}


async def test_per_autoscaler_errors_and_paused_as_keda_shows_per_scaled_object() -> None:
    """KEDA's keda_scaled_object_errors_total and keda_scaled_object_paused, per autoscaler: which
    one fails (the reconciliations counter only says that some do), kept across an invalid spec
    (its syncs are errors too), gone with the object."""
    w, telemetry = World(), ControllerTelemetry()
    errors, paused = P + "autoscaler_errors_total", P + "paused"
    w.observe(30_000)
    telemetry.observe_sync(await w.sync(), 0.01)
    assert labelled(telemetry, errors, "name", "error") == {}
    assert samples(telemetry, paused) == {frozenset({("kind", "PromAutoscaler"), ("namespace", NS),
                                                     ("name", "web")}): 0.0}
    w.metrics.forget(NS, w.query())
    telemetry.observe_sync(await w.sync(), 0.01)
    telemetry.observe_sync(await invalid_spec(w), 0.01)
    assert labelled(telemetry, errors, "name", "error") == {("web", "internal"): 1.0, ("web", "spec"): 1.0}
    w.obj_json = pas_json(extra={"paused": True}, generation=2)
    w.observe(30_000)
    telemetry.observe_sync(await w.sync(), 0.01)
    assert labelled(telemetry, paused, "name") == {("web",): 1.0}
    telemetry.forget_object(KEY)
    assert samples(telemetry, errors) == {} and samples(telemetry, paused) == {}
