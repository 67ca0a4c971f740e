"""What a replay reads before `--from`: the warm-up and the forecaster's history.

Warm-up: a live controller at `--from` carries state from before it (the count it runs at, the
stabilization window's recommendations, the scale events its policies look back on, pods still
starting). A replay that started cold at `--from` would start at `minReplicas` when the actual
replicas are unknown, and its first minutes would show a shortfall no controller ever had. So the
replay starts earlier by the longest window the spec's decisions look back on: the stabilization
windows and policy periods of its behavior (API defaults and the controller's 300 s downscale
window included), the legacy downscale window without one, and the pod start-up. Its ticks count
in no figure.

History: a predictive spec's forecaster reads up to `lookbackSeconds` of each metric's load before
the replay's first sync, fetched as a separate range read and trimmed to what exists.

Non-goals: fetching (`run`), the replay (`simulate`). Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from controller.algorithm.behavior import effective_behavior
from controller.algorithm.spec import AutoscalerSpec
from controller.backtest.model import Grid, LoadModel
from controller.forecast import History

__all__ = ["before", "extended", "forecast_histories", "lookback_seconds", "warmup_seconds"]


def warmup_seconds(spec: AutoscalerSpec, *, downscale_stabilization: float, pod_startup: float) -> float:
    """The longest a decision at `--from` looks back on, and the pod start-up."""
    windows = [pod_startup]
    if spec.behavior is None:
        windows.append(downscale_stabilization)
    else:
        b = effective_behavior(spec.behavior, downscale_stabilization=round(downscale_stabilization))
        for rules in (b.scale_up, b.scale_down):
            if rules is None:
                continue
            windows.append(float(rules.stabilization_window_seconds or 0))
            windows += [float(p.period_seconds) for p in rules.policies or ()]
    return max(windows)


def lookback_seconds(specs: Sequence[AutoscalerSpec]) -> float:
    """History the predictive specs' forecasters read before the replay starts (0: none predicts)."""
    return max((float(s.prediction.lookback_seconds) for s in specs if s.predicts and s.prediction), default=0.0)


def before(grid: Grid, seconds: float) -> Grid | None:
    """The ticks in the `seconds` before `grid` (on its step), or None for none."""
    ticks = math.ceil(seconds / grid.step - 1e-9)
    if ticks <= 0:
        return None
    return Grid(start=grid.start - ticks * grid.step, step=grid.step, count=ticks)


def extended(grid: Grid, ticks: int) -> Grid:
    """`grid` started `ticks` earlier (same end)."""
    return replace(grid, start=grid.start - ticks * grid.step, count=grid.count + ticks)


def forecast_histories(model: LoadModel, grid: Grid, earlier: LoadModel | None, earlier_grid: Grid | None,
                       metrics: int) -> tuple[History, ...]:
    """Per metric, the load the forecaster reads: the history before the replay, trimmed to its first
    sample (what exists), then the replay's ticks. Milli-units, NaN for gaps."""
    out = []
    for k in range(metrics):
        replay = np.fromiter((model.load(k, i) for i in range(grid.count)), dtype=np.float64, count=grid.count)
        start = grid.start
        if earlier is not None and earlier_grid is not None:
            pre = np.fromiter((earlier.load(k, i) for i in range(earlier_grid.count)), dtype=np.float64,
                              count=earlier_grid.count)
            known = np.flatnonzero(~np.isnan(pre))
            if known.size:
                first = int(known[0])
                replay = np.concatenate([pre[first:], replay])
                start = earlier_grid.time(first)
        out.append(History(start=start, step=grid.step, values=replay))
    return tuple(out)
