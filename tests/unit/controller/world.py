"""A controller world on map-backed fakes: one Deployment, its PromAutoscaler, a wall clock.

`World.sync()` runs one reconcile and then does what the watch cache would: the object the next
sync reads carries the status the last write left. `restart()` builds a new Reconciler (empty
memory) over the same cluster state, as a restarted controller or a new leader would start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.algorithm import ControllerConfig
from controller.algorithm.spec import ExternalSamples, Observation
from controller.kube.fake import FakeEventSink, FakePodLister, FakeScaleClient, FakeStatusWriter
from controller.kube.objects import API_VERSION, KIND, Autoscaler, autoscaler_from_object
from controller.kube.ports import ObjectKey, TargetRef
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery
from controller.reconcile import Reconciler
from controller.report import SyncOutcome
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from kubecommon.kubetime import format_time

NS, NAME = "shop", "web"
TARGET = TargetRef(api_version="apps/v1", kind="Deployment", name="web")
KEY = ObjectKey(kind=KIND, namespace=NS, name=NAME)
START = 1_800_000_000.0


def external(name: str, average: str = "10") -> dict[str, Any]:
    return {"type": "External", "external": {"metric": {"name": name},
                                             "target": {"type": "AverageValue", "averageValue": average}}}


def pas_json(*, metrics: list[dict[str, Any]] | None = None, min_replicas: int = 1, max_replicas: int = 20,
             behavior: dict[str, Any] | None = None, extra: Mapping[str, Any] | None = None,
             generation: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                            "minReplicas": min_replicas, "maxReplicas": max_replicas,
                            "metrics": metrics or [external("queue")]}
    if behavior is not None:
        spec["behavior"] = behavior
    spec.update(extra or {})
    return {"apiVersion": API_VERSION, "kind": KIND, "spec": spec,
            "metadata": {"name": NAME, "namespace": NS, "uid": "uid-web", "generation": generation,
                         "resourceVersion": "1"}}


def hpa_json(*, behavior: dict[str, Any] | None, replicas: int, last_scale: float | None = None) -> dict[str, Any]:
    """A native autoscaling/v2 HPA with the World's spec, as the built-in controller left its status
    (`replicas` current and desired; `last_scale`: its last rescale)."""
    hpa = pas_json(behavior=behavior)
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", "HorizontalPodAutoscaler"
    hpa["status"] = {"currentReplicas": replicas, "desiredReplicas": replicas}
    if last_scale is not None:
        hpa["status"]["lastScaleTime"] = format_time(last_scale)
    return hpa


class LoopObserver:
    """The run loop's telemetry port, keeping everything it is told."""

    def __init__(self) -> None:
        self.invalid: list[ObjectKey] = []
        self.synced: list[SyncOutcome] = []
        self.seconds: list[float] = []
        self.forgotten: list[ObjectKey] = []
        self.counts: dict[str, int] = {}

    def observe_sync(self, outcome: SyncOutcome, seconds: float) -> None:
        self.synced.append(outcome)
        self.seconds.append(seconds)

    def observe_invalid_spec(self, key: ObjectKey) -> None:
        self.invalid.append(key)

    def forget_object(self, key: ObjectKey) -> None:
        self.forgotten.append(key)

    def set_object_count(self, kind: str, count: int) -> None:
        self.counts[kind] = count


@dataclass
class World:
    obj_json: dict[str, Any] = field(default_factory=pas_json)
    now: float = START
    leader: bool = True
    checkpoint_interval: float = 60.0
    config: ControllerConfig = field(default_factory=ControllerConfig)
    scale: FakeScaleClient = field(default_factory=FakeScaleClient)
    pods: FakePodLister = field(default_factory=FakePodLister)
    metrics: FakeMetricsSource = field(default_factory=FakeMetricsSource)
    status: FakeStatusWriter = field(default_factory=FakeStatusWriter)
    events: FakeEventSink = field(default_factory=FakeEventSink)
    reconciler: Reconciler | None = None

    def __post_init__(self) -> None:
        self.scale.set(NS, TARGET, replicas=3, selector="app=web")
        self.restart()

    def restart(self) -> None:
        self.reconciler = Reconciler(scale=self.scale, pods=self.pods, metrics=self.metrics, status=self.status,
                                     events=self.events, config=self.config,
                                     is_leader=lambda: self.leader, wall_clock=lambda: self.now,
                                     checkpoint_interval=self.checkpoint_interval)

    @property
    def autoscaler(self) -> Autoscaler:
        return autoscaler_from_object(self.obj_json)

    def query(self, index: int = 0) -> MetricQuery:
        plan = self.autoscaler.metric_plans[index]
        assert isinstance(plan, MetricQuery)
        return plan

    def observe(self, total_milli: int, index: int = 0) -> None:
        self.metrics.answer(NS, self.query(index), ExternalSamples(values=(total_milli,)))

    def answer(self, observation: Observation, index: int = 0) -> None:
        self.metrics.answer(NS, self.query(index), observation)

    def replicas(self) -> int:
        return self.scale.scales[(NS, "apps", "Deployment", NAME)].spec_replicas

    def set_replicas(self, n: int) -> None:
        self.scale.set(NS, TARGET, replicas=n, selector="app=web")

    async def sync(self, *, conflict: str | None = None) -> SyncOutcome:
        assert self.reconciler is not None
        outcome = await self.reconciler.sync(self.autoscaler, conflict=conflict)
        written = self.status.statuses.get(KEY)
        if written is not None:
            self.obj_json = {**self.obj_json, "status": dict(written)}
        return outcome

    def condition(self, kind: str) -> tuple[bool, str] | None:
        for c in (self.obj_json.get("status") or {}).get("conditions", []):
            if c["type"] == kind:
                return c["status"] == "True", c["reason"]
        return None


@dataclass
class LoopRig:
    """The run loop over a World's reconciler, with its queue, observer and a settable clock."""

    world: World
    loop: AutoscalerLoop
    queue: DueQueue[ObjectKey]
    observer: LoopObserver
    clock: list[float]


def loop_rig(world: World | None = None, *, default_period: float = 30.0, now: float = 100.0) -> LoopRig:
    world = world or World()
    clock = [now]
    queue: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=lambda: clock[0]))
    observer = LoopObserver()
    assert world.reconciler is not None
    loop = AutoscalerLoop(world.reconciler, queue, clock=lambda: clock[0], observer=observer,
                          default_period=default_period)
    return LoopRig(world=world, loop=loop, queue=queue, observer=observer, clock=clock)
