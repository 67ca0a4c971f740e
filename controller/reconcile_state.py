"""What reconcile remembers per autoscaler between syncs, and when a status write is worth it.

Per object: the `ScaleHistory` the next decision needs (restored once from the status
checkpoint), the last status and decision summary it wrote, when it last saved the history, and
the last decision (for explain and preview). `needs_status_write` is the write policy of the
design (§8.3): write when the HPA-visible status or our own conditions changed, when the last
decision's outcome or limiting reason changed, after every `/scale` write, and otherwise save the
history at most once per checkpoint interval. At steady load that is one write per interval
(upstream writes only on change, but keeps no history to save).

Also here: the summary values reconcile hands to the status builder (`SyncReport`, the
controller-only `ExtraCondition`s: Paused, Preview, ConflictingAutoscaler) and the limiting
reason read from a decision's trace.

Non-goals: building status JSON (`controller.kube.status`), I/O. Pure: `now` is a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from controller.algorithm.behavior import Recommendation, ScaleHistory
from controller.algorithm.decision import Decision, Outcome, Stage
from controller.algorithm.spec import HpaStatus
from controller.kube.objects import Autoscaler

__all__ = ["ExtraCondition", "ObjectState", "Result", "SyncReport", "WriteResult", "limiting_reason",
           "needs_status_write", "with_initial_recommendation"]

# Condition types and reasons this controller adds to the HPA's three (design §8.4).
PAUSED = "Paused"
PREVIEW = "Preview"
SCALING_ACTIVE = "ScalingActive"
CONFLICTING_AUTOSCALER = "ConflictingAutoscaler"
STATE_RESTORED = "StateRestored"
UNPAUSED = "Unpaused"
PREVIEW_RESCALE = "PreviewRescale"
NOT_LIMITED = "none"


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
    """A condition the algorithm does not know; replaces the algorithm's one of the same type."""

    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncReport:
    """Everything the status builder needs for one object after one sync."""

    autoscaler: Autoscaler
    decision: Decision
    extra_conditions: tuple[ExtraCondition, ...]
    history: ScaleHistory | None  # the checkpoint to save (None: leave it out)
    limiting_reason: str
    now: float


@dataclass(slots=True, kw_only=True)
class ObjectState:
    history: ScaleHistory | None = None
    restored: bool = False  # the status checkpoint was looked at
    fresh_restore: bool = False  # restored this sync: apply the initial-recommendation rule
    written_status: HpaStatus | None = None
    written_extra: tuple[ExtraCondition, ...] = ()
    written_summary: tuple[str, str] | None = None  # (outcome, limiting reason) last written
    written_history: ScaleHistory | None = None
    saved_at: float | None = None  # when the history last reached status
    paused: bool = False
    status_error: str = ""
    last_decision: Decision | None = None
    last_report: SyncReport | None = None
    problems_logged: tuple[str, ...] = ()


def limiting_reason(decision: Decision) -> str:
    """What decided the final count when it is not the metrics' proposal: the last stage that
    changed the number (stabilization or limits), or why there was no proposal; "none" otherwise."""
    if decision.outcome in (Outcome.BLOCKED, Outcome.FAILED_GET_SCALE, Outcome.DISABLED):
        return str(decision.outcome)
    reason = NOT_LIMITED
    for step in decision.trace.steps:
        if step.stage in (Stage.STABILIZATION, Stage.LIMITS, Stage.RANGE) and step.before != step.after:
            reason = step.reason
    return reason


def with_initial_recommendation(history: ScaleHistory, current: int, now: float) -> ScaleHistory:
    """Upstream's first-sync rule applied on top of a restored checkpoint: the current count is a
    recommendation now, so a restart never makes scale-down *less* conservative."""
    return history.with_recommendations((*history.recommendations, Recommendation(replicas=current, timestamp=now)))


def _status_differs(decision: Decision, written: HpaStatus | None) -> bool:
    if written is None:
        return decision.status_changed
    return replace(decision, previous_status=written).status_changed


def needs_status_write(state: ObjectState, report: SyncReport, *, scale_written: bool, interval: float) -> bool:
    d = report.decision
    if _status_differs(d, state.written_status) or report.extra_conditions != state.written_extra:
        return True
    if state.written_summary != (str(d.outcome), report.limiting_reason):
        return True
    if scale_written:
        return True
    if report.history is None or report.history == state.written_history:
        return False
    return state.saved_at is None or report.now - state.saved_at >= interval

