"""What one sync reports: how it ended (`SyncOutcome`, `Result`, `WriteResult`) and what it
decided and shows (`SyncReport`).

The reconciler returns a `SyncOutcome` and keeps the last `SyncReport` of each object; the run
loop, the controller's metrics, explain and preview read them. Values only: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.algorithm.decision import Decision, Outcome
from controller.kube.objects import Autoscaler
from controller.kube.ports import ObjectKey
from controller.kube.status import ExtraCondition

__all__ = ["Result", "SyncOutcome", "SyncReport", "WriteResult"]


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

    @staticmethod
    def of(decision: Decision) -> Result:
        """The result of a sync that no gate held: the decision's outcome."""
        return _BY_OUTCOME.get(decision.outcome, Result.UNCHANGED)


_BY_OUTCOME = {
    Outcome.SCALED: Result.SCALED,
    Outcome.WRITE_FAILED: Result.WRITE_FAILED,
    Outcome.BLOCKED: Result.BLOCKED,
    Outcome.FAILED_GET_SCALE: Result.FAILED_GET_SCALE,
}


class WriteResult(StrEnum):
    NONE = "none"
    SUCCESS = "success"
    ERROR = "error"
    SKIPPED_NOT_LEADER = "not_leader"


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncOutcome:
    key: ObjectKey
    result: Result
    scale_write: WriteResult = WriteResult.NONE
    status_write: WriteResult = WriteResult.NONE
    report: SyncReport | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Retry sooner than the period (the queue's rate limiter decides how much sooner)."""
        return (self.result in (Result.BLOCKED, Result.FAILED_GET_SCALE, Result.WRITE_FAILED)
                or self.status_write is WriteResult.ERROR)  # fmt: skip
