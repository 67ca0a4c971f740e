"""The rules that adjust a `ScaleHistory` before a sync decides on it.

* `with_initial_recommendation`: upstream's first-sync rule on top of a history restored from the
  status checkpoint (a restart never makes scale-down less conservative);
* `with_builtin_rescale`: a previewed native HPA's own rescale, recorded as upstream records it,
  so the shadow decision's policies count the same events;
* `shadow_history_until`: when a shadow history started at `since` holds all the built-in
  controller's history can matter;
* `restorable`: whether a saved checkpoint already restores to the decisions a history makes
  (so a steady autoscaler does not rewrite its status only to move timestamps).

Non-goals: storing the history (reconcile), the stabilization itself (`behavior`). Pure: no I/O,
no clock reads.
"""

from __future__ import annotations

from controller.algorithm.behavior import (
    Behavior, Recommendation, ScaleHistory, effective_behavior, longest_period, record_scale,
)  # fmt: skip
from controller.algorithm.spec import HpaStatus

__all__ = ["restorable", "shadow_history_until", "with_builtin_rescale", "with_initial_recommendation"]


def with_initial_recommendation(history: ScaleHistory, current: int, now: float) -> ScaleHistory:
    """Upstream's first-sync rule applied on top of a restored checkpoint: the current count is a
    recommendation now, so a restart never makes scale-down *less* conservative."""
    return history.with_recommendations((*history.recommendations, Recommendation(replicas=current, timestamp=now)))


def with_builtin_rescale(history: ScaleHistory | None, *, before: HpaStatus | None, behavior: Behavior | None,
                         status: HpaStatus) -> ScaleHistory | None:
    """A previewed native HPA: the built-in controller's own rescale since our last sync (a new
    `status.lastScaleTime` against `before`, the HPA's status at our last sync), recorded as
    upstream's storeScaleEvent recorded it (with `behavior`, the effective one of that sync), so
    the HPA's scale-up/down policies count the same events in the shadow decision as in the real
    one. The change is read from the HPA's own `status.desiredReplicas` before and after (upstream
    sets it to the current count when it does not rescale), not from the target, whose watch cache
    may show the new count a sync before or after the HPA's status."""
    if history is None or before is None or status.last_scale_time is None \
            or status.last_scale_time == before.last_scale_time:
        return history
    return record_scale(history, behavior=behavior, previous=before.desired_replicas, new=status.desired_replicas,
                        now=status.last_scale_time)


def shadow_history_until(since: float, behavior: Behavior | None, *, downscale_stabilization: float) -> float:
    """When a shadow history started at `since` (`behavior` as in the spec) holds all the built-in
    controller's can matter: upstream keeps recommendations for the longest stabilization window
    (without a behavior, the controller's downscale window) and scale events for the longest policy
    period. Before that our decision may differ from the HPA's, whose history did not restart."""
    if behavior is None:
        return since + downscale_stabilization
    effective = effective_behavior(behavior, downscale_stabilization=int(downscale_stabilization))
    rules = (effective.scale_up, effective.scale_down)
    windows = [r.stabilization_window_seconds or 0 for r in rules if r is not None]
    return since + max(0, *windows, *(longest_period(r) for r in rules))


def restorable(saved: ScaleHistory | None, current: ScaleHistory, replicas: int) -> bool:
    """Whether restoring `saved` (plus `with_initial_recommendation` at `replicas`) decides as
    `current` does, so saving `current` would add nothing a restart could use.

    True when the scale events are the same and every recommendation `current` has that `saved`
    lacks is for `replicas`: the restore's own recommendation of `replicas` is newer than each of
    them, so it is inside every stabilization window they are in. Recommendations `saved` has
    and `current` dropped were outside the longest window already, and stay so. This is what
    keeps a steady autoscaler from rewriting its status once a minute only to move timestamps.
    """
    if saved is None:
        return not current.recommendations and not current.scale_up_events and not current.scale_down_events \
            and current.idle_since is None
    if saved.scale_up_events != current.scale_up_events or saved.scale_down_events != current.scale_down_events \
            or saved.idle_since != current.idle_since:
        return False
    known = set(saved.recommendations)
    return all(r.replicas == replicas or r in known for r in current.recommendations)
