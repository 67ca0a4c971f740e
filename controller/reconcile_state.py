"""What reconcile remembers per autoscaler between syncs, and the conditions it adds to status.

Per object: the `ScaleHistory` the next decision needs (restored once from the status
checkpoint), the status JSON it last wrote (the baseline of `controller.kube.status`'s write
rule, so a lagging watch cache never causes a second write), whether it announced a pause or
the forecast's fallback to reactive scaling (`forecast_events`), the events of its last sync
with when they were emitted (`unrepeated`), and the last report (for explain and preview).

`PodClaims` indexes which autoscalers selected which pods, for upstream's AmbiguousSelector check.

Also here: the values reconcile reports (`SyncReport`, `Result`, `WriteResult`) and the two
conditions the status builder does not know, laid over its JSON by `overlay_conditions`:
`ScalingActive=False/ConflictingAutoscaler` while another autoscaler targets the same workload,
and `Preview=True/PreviewMode` in Preview mode (design §8.4; `Paused` is the builder's own).

Non-goals: building the status JSON (`controller.kube.status`), I/O. Pure: `now` is a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Event, Reason
from controller.algorithm.decision import Decision
from controller.kube.objects import Autoscaler
from controller.kube.prediction_status import fallback_transition
from controller.kube.status import PAUSED_CONDITION
from kubecommon.kubetime import format_time

__all__ = ["ExtraCondition", "ObjectState", "PodClaims", "Result", "SyncReport", "WriteResult", "forecast_events",
           "overlay_conditions", "paused_in_status", "unrepeated"]

PREVIEW = "Preview"
PREVIEW_MODE = "PreviewMode"
SCALING_ACTIVE = "ScalingActive"
CONFLICTING_AUTOSCALER = str(Reason.CONFLICTING_AUTOSCALER)


class Result(StrEnum):
    """How one sync ended, as the reconciliations counter labels it."""

    SCALED = "scaled"
    UNCHANGED = "unchanged"
    PAUSED = "paused"
    PREVIEW = "preview"
    CONFLICT = "conflict"
    BLOCKED = "blocked"  # metrics or selector could not be used: no scaling
    FAILED_GET_SCALE = "failed_get_scale"
    WRITE_FAILED = "write_failed"
    NOT_LEADER = "not_leader"  # leadership ended during the sync: nothing written


class WriteResult(StrEnum):
    NONE = "none"
    SUCCESS = "success"
    ERROR = "error"
    SKIPPED_NOT_LEADER = "not_leader"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtraCondition:
    """A condition the status builder does not set; replaces the one of the same type."""

    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncReport:
    """One object after one sync: what was decided and what the status shows about it."""

    autoscaler: Autoscaler
    decision: Decision
    extra_conditions: tuple[ExtraCondition, ...]
    limiting_reason: str
    now: float
    # A previewed HPA: its shadow history started at `history_since` (first sync in this process)
    # and holds all the built-in controller's could by `history_until` (see `shadow_history_until`).
    history_since: float | None = None
    history_until: float | None = None


@dataclass(slots=True, kw_only=True)
class ObjectState:
    history: ScaleHistory | None = None
    restored: bool = False  # the status checkpoint was looked at
    fresh_restore: bool = False  # restored this sync: apply the initial-recommendation rule
    written: Mapping[str, Any] | None = None  # the status JSON this process last wrote (or its echo, once equal)
    echo_compared: str = ""  # the cached resourceVersion whose status was last compared with `written`
    checkpointed: ScaleHistory | None = None  # the history that status holds (restored or written)
    paused: bool = False
    status_error: str = ""
    last_report: SyncReport | None = None
    announced: dict[tuple[str, str, str], float] = field(default_factory=dict)  # event -> when last emitted
    history_since: float | None = None  # a previewed HPA: when its shadow history started
    forecast_fallback: bool | None = None  # the accuracy guard's last verdict (None: not yet known)


def unrepeated(state: ObjectState, events: tuple[Event, ...], *, now: float, within: float) -> tuple[Event, ...]:
    """`events` without those this object already emitted less than `within` seconds ago.

    Upstream syncs a failing HPA once a period and records its Warnings each time; a retry that
    comes sooner (our queue retries failures after a short backoff) repeats nothing new, and
    re-emitting would spend the object's event budget (client-go's spam filter: 25, then one per
    5 minutes), so the SuccessfulRescale after a recovery would be dropped. Only this sync's
    events are remembered, so an event that stops and comes back is announced at once."""
    kept: list[Event] = []
    announced: dict[tuple[str, str, str], float] = {}
    for event in events:
        key = (str(event.type), str(event.reason), event.message)
        last = state.announced.get(key)
        if last is not None and now - last < within:
            announced[key] = last
            continue
        announced.setdefault(key, now)
        kept.append(event)
    state.announced = announced
    return tuple(kept)


def paused_in_status(status: Mapping[str, Any]) -> bool:
    """Whether the status says the object was paused (its `Paused` condition is True): what a
    restarted controller takes as already announced, so it neither repeats `Paused` nor misses
    `Unpaused` for a pause lifted while it was down."""
    return any(isinstance(c, Mapping) and c.get("type") == PAUSED_CONDITION and c.get("status") == "True"
               for c in status.get("conditions") or ())


def forecast_events(state: ObjectState, status: Mapping[str, Any], decision: Decision) -> tuple[Event, ...]:
    """`ForecastFallback` / `ForecastRecovered` when the accuracy guard changed its verdict since
    the last sync (or since the verdict in `status`, the last written, after a restart)."""
    state.forecast_fallback, events = fallback_transition(state.forecast_fallback, status, decision.prediction)
    return events


def overlay_conditions(status: Mapping[str, Any], extras: tuple[ExtraCondition, ...], *,
                       previous: Mapping[str, Any], now: float) -> dict[str, Any]:  # fmt: skip
    """`status` with each extra condition replacing the one of its type (or appended); the
    transition time is kept from `previous` unless the condition's status flipped."""
    if not extras:
        return dict(status)
    before = {c.get("type"): c for c in previous.get("conditions") or () if isinstance(c, Mapping)}
    conditions = [dict(c) for c in status.get("conditions") or ()]
    for extra in extras:
        value = "True" if extra.status else "False"
        old = before.get(extra.type)
        when = old.get("lastTransitionTime") if old is not None and old.get("status") == value else None
        entry = {"type": extra.type, "status": value, "lastTransitionTime": when or format_time(now),
                 "reason": extra.reason, "message": extra.message}
        at = next((i for i, c in enumerate(conditions) if c.get("type") == extra.type), None)
        if at is None:
            conditions.append(entry)
        else:
            conditions[at] = entry
    return {**status, "conditions": conditions}


class PodClaims:
    """Which autoscalers selected each pod at their last sync: upstream's AmbiguousSelector check
    ("pods by selector … are controlled by multiple HPAs") as a reverse index, so one check costs
    the object's own pods, not a scan of every autoscaler (k/k#139111)."""

    def __init__(self) -> None:
        self._by_pod: dict[tuple[str, str, str], set[str]] = {}  # (kind, namespace, pod) -> names
        self._pods: dict[tuple[str, str, str], frozenset[str]] = {}  # (kind, namespace, name) -> pods

    def claim(self, kind: str, namespace: str, name: str, pods: frozenset[str]) -> tuple[str, ...]:
        """Record `name`'s pods; return the other autoscalers (`ns/name`) selecting any of them."""
        self.release(kind, namespace, name)
        self._pods[(kind, namespace, name)] = pods
        others: set[str] = set()
        for pod in pods:
            owners = self._by_pod.setdefault((kind, namespace, pod), set())
            others.update(owners)
            owners.add(name)
        return tuple(sorted(f"{namespace}/{other}" for other in others))

    def release(self, kind: str, namespace: str, name: str) -> None:
        for pod in self._pods.pop((kind, namespace, name), frozenset()):
            owners = self._by_pod.get((kind, namespace, pod))
            if owners is not None:
                owners.discard(name)
                if not owners:
                    del self._by_pod[(kind, namespace, pod)]
