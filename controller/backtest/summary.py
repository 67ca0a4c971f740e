"""The figures people ask of a replay: cost, churn, under-provisioning, limits, nodes.

* replica-hours: the simulated count held over each tick (and the actual count's, when known);
* scale events (up / down), the largest single change, and flaps: a scale event in the opposite
  direction of the previous one within `flap_window` seconds of it;
* under-provisioning: ticks where any metric's value (as the algorithm compared it to its target)
  is above the target, as time, and the peak value / target ratio;
* time at maxReplicas and at minReplicas;
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

from controller.backtest.model import Gap, LoadModel
from controller.backtest.simulate import ScaleChange, Timeline

__all__ = ["Summary", "count_flaps", "gap_seconds", "pods_per_node", "summarize"]


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
    peak_ratio: float | None  # max value / target over every metric and tick (None: no values)
    seconds_at_max: float
    seconds_at_min: float
    blocked_ticks: int
    peak_nodes: int | None
    node_hours: float | None

    def to_dict(self) -> dict[str, object]:
        return {field: getattr(self, field) for field in self.__slots__}


def pods_per_node(allocatable: Mapping[str, int], requests: Mapping[str, int]) -> int | None:
    """How many pods one node holds (scarcest resource); None without the inputs."""
    shared = [r for r in allocatable if requests.get(r)]
    if not shared:
        return None
    return max(1, min(allocatable[r] // requests[r] for r in shared))


def summarize(t: Timeline, model: LoadModel, *, flap_window: float,
              per_node: int | None) -> Summary:
    step, spec = t.grid.step, t.spec
    reps = t.replicas
    above, peak = _above_target(t)
    actual = [model.actual_replicas(i) for i in range(t.grid.count)]
    known = [a for a in actual if a is not None]
    nodes = [math.ceil(r / per_node) for r in reps] if per_node else []
    ups = sum(1 for c in t.changes if c.after > c.before)
    return Summary(
        name=t.name,
        replica_hours=sum(reps) * step / 3600.0,
        actual_replica_hours=sum(known) * step / 3600.0 if len(known) == t.grid.count else None,
        scale_ups=ups, scale_downs=len(t.changes) - ups, flaps=count_flaps(t.changes, flap_window),
        largest_change=max((abs(c.after - c.before) for c in t.changes), default=0),
        min_replicas_seen=min(reps, default=0), max_replicas_seen=max(reps, default=0),
        seconds_above_target=above * step, peak_ratio=peak,
        seconds_at_max=sum(1 for r in reps if r >= spec.max_replicas) * step,
        seconds_at_min=sum(1 for r in reps if r <= spec.min_replicas) * step,
        blocked_ticks=sum(1 for b in t.limited_by if b == "blocked"),
        peak_nodes=max(nodes) if nodes else None,
        node_hours=sum(nodes) * step / 3600.0 if nodes else None,
    )


def count_flaps(changes: Sequence[ScaleChange], window: float) -> int:
    """Direction reversals: a change opposite to the previous one, within `window` seconds of it."""
    return sum(1 for before, after in itertools.pairwise(changes)
               if (after.after > after.before) != (before.after > before.before)
               and after.time - before.time <= window)


def _above_target(t: Timeline) -> tuple[int, float | None]:
    above = 0
    peak: float | None = None
    for i in range(t.grid.count):
        hit = False
        for values, target in zip(t.values, t.targets, strict=True):
            v = values[i]
            if math.isnan(v) or not target > 0:
                continue
            ratio = v / target
            peak = ratio if peak is None or ratio > peak else peak
            hit = hit or ratio > 1.0
        above += hit
    return above, peak


def gap_seconds(found: Sequence[Gap], step: float) -> float:
    return sum(g.ticks for g in found) * step
