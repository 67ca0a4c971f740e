"""The figures people ask of a replay: cost, churn, under-provisioning, limits, nodes.

Every time figure weighs a tick by the seconds it stands for in the range (`Grid.span`: until the
next tick, the last one until `--to`), so a figure never exceeds the range it covers.

* replica-hours: the simulated count held over each tick (and the actual count's, when known);
* scale events (up / down), the largest single change, and flaps: a scale event in the opposite
  direction of the previous one within `flap_window` seconds of it;
* under-provisioning: ticks where any metric's value (as the algorithm compared it to its target;
  with pod start-up, an AverageValue metric over the ready pods) is above the target, as time, and
  above it by more than the tolerance; the peak value / target ratio; deficit replica-hours: the
  replicas needed (every metric at its target plus the tolerance: a shortfall the HPA accepts is
  none) minus the ready replicas, when positive, over time; over-provisioning: ticks where
  every metric that could be read is below its target;
* time at maxReplicas and at minReplicas, and at 0 replicas (scale to zero: `minReplicas: 0`);
* against the recorded replicas (when known): how many steps had a different count, the time
  above and below it, and each run of differing steps;
* nodes: with node allocatable and pod requests, nodes = ceil(replicas / pods per node), where a
  node holds floor(allocatable / request) pods for its scarcest resource (perfect packing, no
  daemon sets or system reservations: a lower bound).

Non-goals: deciding, rendering. Pure: no I/O, no clock.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.backtest.model import Gap, LoadModel, iso_time
from controller.backtest.simulate import ScaleChange, Timeline

__all__ = ["Difference", "Summary", "count_flaps", "gap_seconds", "pods_per_node", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """A run of steps where the replay's count differs from the count the target really had."""

    start: float
    end: float  # the last differing tick
    steps: int  # grid steps (a spec syncing every n-th step still counts each)
    replicas: tuple[int, int]  # the replay's min, max over the run
    actual: tuple[float, float]  # the recorded min, max over the run


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    name: str
    replica_hours: float
    actual_replica_hours: float | None
    scale_ups: int
    scale_downs: int
    flaps: int
    largest_change: int
    min_replicas_seen: int
    max_replicas_seen: int
    seconds_above_target: float
    seconds_above_tolerance: float  # a metric above its target by more than the tolerance
    deficit_replica_hours: float  # sum over ticks of max(0, replicas needed - ready replicas) x tick hours
    seconds_below_target: float  # every metric read below its target (more replicas than needed)
    peak_ratio: float | None  # max value / target over every metric and tick (None: no values)
    seconds_at_max: float
    seconds_at_min: float
    blocked_ticks: int
    seconds_at_zero: float = 0.0  # scale to zero: time the replay held 0 replicas
    peak_nodes: int | None
    node_hours: float | None
    steps_differing: int | None = None  # ticks whose count differs from the recorded one (None: unknown)
    seconds_above_actual: float | None = None
    seconds_below_actual: float | None = None
    differences: tuple[Difference, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out = {field: getattr(self, field) for field in self.__slots__ if field != "differences"}
        out["differences"] = [{"from": iso_time(d.start), "to": iso_time(d.end), "steps": d.steps,
                               "replicas": list(d.replicas), "actual": list(d.actual)} for d in self.differences]
        return out


def pods_per_node(allocatable: Mapping[str, int], requests: Mapping[str, int]) -> int | None:
    """How many pods one node holds (scarcest resource); None without the inputs."""
    shared = [r for r in allocatable if requests.get(r)]
    if not shared:
        return None
    return max(1, min(allocatable[r] // requests[r] for r in shared))


def summarize(t: Timeline, model: LoadModel, *, flap_window: float,
              per_node: int | None) -> Summary:
    """The figures of one replay; each tick counts for `Grid.span` seconds, so they cover the range exactly."""
    grid, spec = t.grid, t.spec
    spans = [grid.span(i) for i in range(grid.count)]
    low = spec.min_replicas
    reps = t.replicas
    above, below, peak = _against_target(t)
    beyond = _beyond_tolerance(t)
    ready = t.ready if len(t.ready) == grid.count else reps
    needed = t.needed if len(t.needed) == grid.count else [math.nan] * grid.count
    deficit = [0.0 if math.isnan(n) else max(0.0, n - r) for n, r in zip(needed, ready, strict=True)]
    actual = [model.actual_replicas(i) for i in range(grid.count)]
    nodes = [math.ceil(r / per_node) for r in reps] if per_node else []
    own = [c for c in t.changes if not c.external]  # the target's writes made outside are not decisions
    ups = sum(1 for c in own if c.after > c.before)
    known = all(a is not None for a in actual)
    return Summary(
        name=t.name,
        replica_hours=_weighted(reps, spans) / 3600.0,
        actual_replica_hours=_weighted([a or 0.0 for a in actual], spans) / 3600.0 if known else None,
        scale_ups=ups, scale_downs=len(own) - ups, flaps=count_flaps(own, flap_window),
        largest_change=max((abs(c.after - c.before) for c in own), default=0),
        min_replicas_seen=min(reps, default=0), max_replicas_seen=max(reps, default=0),
        seconds_above_target=_weighted(above, spans), seconds_below_target=_weighted(below, spans), peak_ratio=peak,
        seconds_above_tolerance=_weighted(beyond, spans), deficit_replica_hours=_weighted(deficit, spans) / 3600.0,
        seconds_at_max=_weighted([r >= spec.max_replicas for r in reps], spans),
        seconds_at_min=_weighted([r <= low and (r > 0 or low == 0) for r in reps], spans),  # 0 < min: disabled
        blocked_ticks=sum(1 for b in t.limited_by if b == "blocked"),
        seconds_at_zero=_weighted([r == 0 for r in reps], spans),
        peak_nodes=max(nodes) if nodes else None,
        node_hours=_weighted(nodes, spans) / 3600.0 if nodes else None,
        **_against_actual(t, actual, spans),
    )


def _weighted(values: Sequence[float], spans: Sequence[float]) -> float:
    return math.fsum(v * s for v, s in zip(values, spans, strict=True))


def _against_actual(t: Timeline, actual: Sequence[float | None], spans: Sequence[float]) -> dict[str, Any]:
    """Where the replay's count differs from the recorded one (ticks without a record are skipped)."""
    if all(a is None for a in actual):
        return {}
    differs = [a is not None and round(a) != r for r, a in zip(t.replicas, actual, strict=True)]
    above = [a is not None and r > round(a) for r, a in zip(t.replicas, actual, strict=True)]
    below = [a is not None and r < round(a) for r, a in zip(t.replicas, actual, strict=True)]
    runs: list[Difference] = []
    i, n = 0, len(differs)
    while i < n:
        if not differs[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and differs[j + 1]:
            j += 1
        reps = t.replicas[i:j + 1]
        seen = [a for a in actual[i:j + 1] if a is not None]
        runs.append(Difference(start=t.grid.time(i), end=t.grid.time(j), steps=j - i + 1,
                               replicas=(min(reps), max(reps)), actual=(min(seen), max(seen))))
        i = j + 1
    return {"steps_differing": sum(differs), "seconds_above_actual": _weighted(above, spans),
            "seconds_below_actual": _weighted(below, spans), "differences": tuple(runs)}


def count_flaps(changes: Sequence[ScaleChange], window: float) -> int:
    """Direction reversals: a change opposite to the previous one, within `window` seconds of it."""
    return sum(1 for before, after in itertools.pairwise(changes)
               if (after.after > after.before) != (before.after > before.before)
               and after.time - before.time <= window)


def _against_target(t: Timeline) -> tuple[list[bool], list[bool], float | None]:
    """Per tick: any metric above its target; every metric read below it. And the peak value / target."""
    above: list[bool] = []
    below: list[bool] = []
    peak: float | None = None
    for i in range(t.grid.count):
        ratios = [values[i] / target for values, target in zip(t.values, t.targets, strict=True)
                  if not math.isnan(values[i]) and target > 0]
        if ratios:
            top = max(ratios)
            peak = top if peak is None or top > peak else peak
        above.append(any(r > 1.0 for r in ratios))
        below.append(bool(ratios) and all(r < 1.0 for r in ratios))
    return above, below, peak


def _beyond_tolerance(t: Timeline) -> list[bool]:
    """Per tick: any metric above its target by more than the (scale-up) tolerance."""
    limit = 1.0 + t.tolerance
    pairs = [(values, target) for values, target in zip(t.values, t.targets, strict=True) if target > 0]
    return [any(values[i] > target * limit for values, target in pairs) for i in range(t.grid.count)]


def gap_seconds(found: Sequence[Gap], step: float) -> float:
    return sum(g.ticks for g in found) * step
