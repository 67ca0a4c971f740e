"""Issue 24: the live controller and the backtest agree on the forecast and the replicas for the same history.

One synthetic history (3 days at 60 s of a daily cycle with a steep morning ramp, an External
AverageValue metric) is replayed by the backtest's `simulate` and driven through the live
`Reconciler` (map-backed kube and metrics ports; `LiveForecasts` over a `HistoryStore` whose
Prometheus reader serves the same samples) over the same 15 s syncs around the ramp, with the
same External value each sync and pods ready at once. Both call `predict_metric` then
`decide`/`complete`; at every sync the forecast and the desired replicas must be equal.

The live store keeps history as float16 over a power-of-two scale (`history.window`, a documented
memory trade); the load is whole multiples of 1024 milli-units, which that storage holds exactly, so
both sides forecast from the very same samples (unrounded, the forecasts differ by about 0.03%, e.g.
90240 live against 90261 replayed, and the replicas still agree). The live target's status.replicas
follows each write at once, as the replay's pods (start-up 0) do.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

from adapter.config import parse_config
from adapter.rules import compile_config
from adapter.rules.query import PromQL
from controller.algorithm import ControllerConfig
from controller.algorithm.spec import ExternalSamples
from controller.backtest.model import Grid, LoadModel, MetricHistory
from controller.backtest.simulate import simulate
from controller.forecast import History
from controller.history.fake import FakeHistoryReader, FakeSeries
from controller.history.live import HistoryStore, LiveForecasts
from controller.history.resolve import MetricQuery, QueryKind
from controller.kube.fake import FakeEventSink, FakePodLister, FakeScaleClient, FakeStatusWriter
from controller.kube.objects import API_VERSION, KIND, autoscaler_from_object
from controller.kube.ports import TargetRef
from controller.metrics.fake import FakeMetricsSource
from controller.metrics.source import MetricQuery as LiveQuery
from controller.reconcile import Reconciler

DAY, STEP, SYNC = 86_400.0, 60.0, 15.0
MIDNIGHT = 1_800_000_000.0 // DAY * DAY
START = MIDNIGHT + 3 * DAY + 8 * 3600  # the fourth day, 08:00: the ramp from 06:00 steepens (85 -> 167)
SYNCS = 240  # an hour of 15 s syncs
RULES = compile_config(parse_config("""
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
""", source="rules.yaml"))
DOC: dict[str, Any] = {
    "apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "web", "namespace": "shop", "uid": "u1"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 2, "maxReplicas": 60,
             "metrics": [{"type": "External", "external": {"metric": {"name": "queue_depth"},
                                                           "target": {"type": "AverageValue", "averageValue": "10"}}}],
             "prediction": {"mode": "Active", "horizonSeconds": 300, "lookbackSeconds": 3 * 86_400}}}


def _load(t: float) -> float:
    """Milli-units: 40 at night, 400 at noon, a steep rise from 06:00; whole multiples of 1024."""
    phase = (t % DAY) / DAY
    raw = 1000.0 * (40 + 360 * max(0.0, math.sin(math.pi * (phase - 0.25) / 0.5)) ** 3)
    return float(round(raw / 1024) * 1024)


def _units(t: float) -> float:
    """What Prometheus answers: units (the store keeps milli-units)."""
    return _load(t) / 1000


def _syncs() -> list[float]:
    return [START + k * SYNC for k in range(SYNCS)]


def _backtest(initial: int) -> tuple[list[float | None], list[int]]:
    spec = autoscaler_from_object(DOC).spec
    grid = Grid(start=START, step=SYNC, count=SYNCS)
    first = START - 3 * DAY + STEP  # what the live store holds at the first sync: the lookback up to now
    history = History(start=first, step=STEP,
                      values=np.array([_load(t) for t in np.arange(first, grid.end + STEP, STEP)]))
    now = array("d", [_load(t) for t in _syncs()])
    model = LoadModel(grid=grid, histories=[MetricHistory(total=now, present=b"\x01" * SYNCS,
                                                          pods=array("H", [1] * SYNCS))],
                      queries=[MetricQuery(index=0, spec=spec.metrics[0], kind=QueryKind.EXTERNAL,
                                           promql=PromQL("q"), object_label="")],
                      actual=None, window=0.0)
    timeline = simulate("web", spec, model, grid, config=ControllerConfig(), requests={}, initial_replicas=initial,
                        histories=(history,))
    forecasts = [None if math.isnan(v) else v for v in timeline.forecasts[0]]
    return forecasts, list(timeline.replicas)


async def _live(initial: int) -> tuple[list[float | None], list[int], int]:
    obj = autoscaler_from_object(DOC)
    reader = FakeHistoryReader(shapes={'queue_depth{queue!=""}': (("queue_depth", frozenset({"queue"})),)},
                               series={"sum(queue_depth{}) by (queue)": [FakeSeries(labels={"queue": "q"},
                                                                                    value=_units)]})
    scale, metrics, status = FakeScaleClient(), FakeMetricsSource(), FakeStatusWriter()
    target = TargetRef(api_version="apps/v1", kind="Deployment", name="web")
    scale.set("shop", target, replicas=initial, selector="app=web")
    clock = [START]
    reconciler = Reconciler(scale=scale, pods=FakePodLister(), metrics=metrics, status=status,
                            events=FakeEventSink(), config=ControllerConfig(), is_leader=lambda: True,
                            wall_clock=lambda: clock[0],
                            forecasts=LiveForecasts(HistoryStore(reader, RULES, rules_path="rules.yaml")))
    query = LiveQuery(type="External", name="queue_depth")  # type: ignore[arg-type]
    forecasts: list[float | None] = []
    replicas: list[int] = []
    used = 0
    for now in _syncs():
        clock[0] = now
        metrics.answer("shop", query, ExternalSamples(values=(int(_load(now)),), timestamp=now))
        written = dict(status.statuses.get(obj.key, {}))
        outcome = await reconciler.sync(autoscaler_from_object({**DOC, "status": written}))
        assert outcome.report is not None and outcome.report.decision.prediction is not None
        used += outcome.report.decision.prediction.used
        (metric,) = outcome.report.decision.prediction.metrics
        forecasts.append(None if metric.forecast is None else float(metric.forecast))
        n = (await scale.get("shop", target)).spec_replicas
        scale.set("shop", target, replicas=n, selector="app=web")  # pods ready at once: status.replicas follows
        replicas.append(n)
    return forecasts, replicas, used


async def test_live_and_backtest_agree_on_the_forecast_and_replicas_for_the_same_history() -> None:
    initial = math.ceil(_load(START) / 10_000)
    live_forecasts, live_replicas, used = await _live(initial)
    bt_forecasts, bt_replicas = _backtest(initial)
    assert sum(f is not None for f in live_forecasts) > 0.9 * SYNCS, live_forecasts
    assert live_replicas[-1] >= 1.5 * initial, live_replicas  # the ramp is in the window
    assert used >= 10, used  # the forecast raised the count at those syncs: the replicas depend on it
    diffs = [(k, lf, bf, lr, br) for k, (lf, bf, lr, br)
             in enumerate(zip(live_forecasts, bt_forecasts, live_replicas, bt_replicas, strict=True))
             if lf != bf or lr != br]
    assert diffs == [], f"{len(diffs)} syncs differ (sync, live forecast, backtest forecast, live, backtest): {diffs[:10]}"
