"""The one decide shell: what a sync read, turned into the algorithm's input.

The live controller (`controller.reconcile`), the backtest (`controller.backtest.simulate`) and,
through the real `Reconciler`, the conformance runner all build `SyncInput` here, so a rule about
the input (the first-sync recommendation after a restore, a previewed native HPA's own rescale)
is written once and a new input (a forecast, a zero rule) enters in one place.

Non-goals: reading (the callers), deciding (`decide`). Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.algorithm.behavior import Behavior, ScaleHistory
from controller.algorithm.history_rules import with_builtin_rescale, with_initial_recommendation
from controller.algorithm.pods import PodInfo
from controller.algorithm.spec import (
    AutoscalerSpec, HpaStatus, MetricForecast, Observation, ScaleTarget, SelectorProblem, SyncInput,
)  # fmt: skip

__all__ = ["sync_input"]

_NO_STATUS = HpaStatus()


def sync_input(spec: AutoscalerSpec, *, scale: ScaleTarget, now: float, status: HpaStatus = _NO_STATUS,
               history: ScaleHistory | None = None, restored: bool = False, pods: tuple[PodInfo, ...] = (),
               observations: tuple[Observation, ...] = (), selector_problem: SelectorProblem | None = None,
               forecasts: Sequence[MetricForecast | None] = (), namespace: str = "",
               native_before: tuple[HpaStatus, Behavior | None] | None = None) -> SyncInput:
    """The input of one sync. `restored`: `history` came from the status checkpoint and this is the
    first sync since (upstream's first-sync recommendation of the current count is added to it).
    `native_before`: a previewed native HPA's status and effective behavior at our last sync (the
    built-in controller's own rescale since then is added to `history`). `forecasts` count only
    when `spec.prediction` asks for them (`prediction.predict` decides that, as for any input)."""
    if native_before is not None:
        before, behavior = native_before
        history = with_builtin_rescale(history, before=before, behavior=behavior, status=status)
    if history is not None and restored:
        history = with_initial_recommendation(history, scale.spec_replicas, now)
    return SyncInput(spec=spec, scale=scale, now=now, status=status, pods=pods, observations=observations,
                     selector_problem=selector_problem, history=history, namespace=namespace,
                     forecasts=tuple(forecasts))
