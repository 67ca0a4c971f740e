"""The live controller and the backtest agree: the same metric sequence gives the same replicas.

The live side is the real `controller.reconcile.Reconciler` over the map-backed ports (scale,
pods, metrics, status, events), its object re-read each sync with the status it last wrote, as
the watch cache would deliver it; the pods follow the replica count as a Deployment's would. The
backtest side is `simulate` over a load model holding the same totals. Both end in
`controller.algorithm.decide`/`complete`; this test proves nothing else changes the count.
"""

from __future__ import annotations

from array import array
from typing import Any

import yaml

from controller.algorithm import ControllerConfig
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import ExternalSamples, PodSamples
from controller.backtest.model import Grid, LoadModel, MetricHistory
from controller.history.resolve import MetricQuery, QueryKind
from controller.backtest.simulate import simulate
from controller.backtest.spec_file import spec_from_manifest
from controller.kube.fake import FakeEventSink, FakePodLister, FakeScaleClient, FakeStatusWriter
from controller.kube.objects import autoscaler_from_object
from controller.kube.ports import ObjectKey
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery as LiveQuery
from controller.reconcile import Reconciler

MANIFEST = yaml.safe_load("""
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata: {name: web, namespace: shop, uid: u1, generation: 1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 12
  metrics:
  - type: Pods
    pods: {metric: {name: requests_per_second}, target: {type: AverageValue, averageValue: "100"}}
  - type: External
    external: {metric: {name: queue_depth}, target: {type: AverageValue, averageValue: "50"}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60, policies: [{type: Pods, value: 1, periodSeconds: 30}]}
    scaleUp: {policies: [{type: Percent, value: 50, periodSeconds: 30}]}
""")
T0, STEP = 1_000_000.0, 15.0
# Total demand (requests/s over all pods) and queue depth per sync: a ramp, a spike, a fall, a wobble.
DEMAND = [400, 450, 900, 1200, 1250, 600, 300, 300, 280, 320, 900, 150, 150, 150, 150, 150, 150, 800, 790, 810]
QUEUE = [10, 10, 10, 400, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 600, 10]
INITIAL = 4


def _pod(name: str) -> PodInfo:
    return PodInfo(name=name, start_time=T0 - 1e9, ready_transition=T0 - 1e9,
                   containers=(ContainerInfo(name="main", requests={}),))


async def _live() -> list[int]:
    scale, pods, metrics = FakeScaleClient(), FakePodLister(), FakeMetricsSource()
    status, events = FakeStatusWriter(), FakeEventSink()
    obj = autoscaler_from_object(MANIFEST)
    scale.set("shop", obj.target, replicas=INITIAL, selector="app=web")
    now = [T0]
    reconciler = Reconciler(scale=scale, pods=pods, metrics=metrics, status=status, events=events,
                            config=ControllerConfig(), is_leader=lambda: True, wall_clock=lambda: now[0])
    pods_query = LiveQuery(type="Pods", name="requests_per_second")  # type: ignore[arg-type]
    queue_query = LiveQuery(type="External", name="queue_depth")  # type: ignore[arg-type]
    key = ObjectKey(kind="PromAutoscaler", namespace="shop", name="web")
    seen = []
    for k, (demand, queue) in enumerate(zip(DEMAND, QUEUE, strict=True)):
        now[0] = T0 + k * STEP
        n = (await scale.get("shop", obj.target)).spec_replicas
        pods.by_namespace["shop"] = [({"app": "web"}, _pod(f"sim-{i}")) for i in range(n)]
        sample = PodMetric(value=int(demand * 1000 / n), timestamp=now[0], window=0.0)
        metrics.answer("shop", pods_query, PodSamples(values={f"sim-{i}": sample for i in range(n)}))
        metrics.answer("shop", queue_query, ExternalSamples(values=(queue * 1000,), timestamp=now[0]))
        written: dict[str, Any] = dict(status.statuses.get(key, {}))
        await reconciler.sync(autoscaler_from_object({**MANIFEST, "status": written}))
        seen.append((await scale.get("shop", obj.target)).spec_replicas)
    return seen


def _backtest() -> list[int]:
    spec = spec_from_manifest(MANIFEST)
    grid = Grid(start=T0, step=STEP, count=len(DEMAND))
    reporting = array("H", [2] * grid.count)  # two pods reported; their sum is the total demand
    demand = MetricHistory(total=array("d", [d * 1000.0 for d in DEMAND]), present=b"\x01" * grid.count,
                           pods=reporting)
    queue = MetricHistory(total=array("d", [q * 1000.0 for q in QUEUE]), present=b"\x01" * grid.count,
                          pods=reporting)
    queries = [MetricQuery(index=i, spec=m, kind=kind, promql="x", object_label="pod")  # type: ignore[arg-type]
               for i, (m, kind) in enumerate(zip(spec.autoscaler.metrics, (QueryKind.PER_POD, QueryKind.EXTERNAL), strict=True))]
    model = LoadModel(grid=grid, queries=queries, histories=[demand, queue], actual=None, window=0.0)
    timeline = simulate("web", spec.autoscaler, model, grid, config=ControllerConfig(), requests={},
                        initial_replicas=INITIAL)
    return list(timeline.replicas)


async def test_the_same_metric_sequence_gives_the_same_replicas_live_and_in_the_backtest() -> None:
    live = await _live()
    assert len(set(live)) >= 4, f"the sequence must exercise scaling both ways: {live}"
    assert _backtest() == live

