"""The gates of one sync: what it may do with its decision, computed once, as a value.

Every sync reads and decides the same way; the gates say what follows:

* `native`: a native HPA previewed beside the built-in controller: decide only; no write of any
  kind, no events (the built-in controller scales it);
* `paused` (`spec.paused`): hold the replicas; the result is `paused`;
* `conflict`: another autoscaler targets the same workload (`controller.conflicts` says why):
  no `/scale` write; `ScalingActive=False/ConflictingAutoscaler` and a Warning say so;
* `preview` (`spec.mode: Preview`): no `/scale` write; the status (`Preview=True/PreviewMode`,
  `desiredReplicas`) and a `PreviewRescale` event show what it would do.

The first that applies, in that order (paused, conflict, preview or native), is the sync's
result (`hold`); when none does, the decision may write `/scale`. Leadership is no gate value:
the Lease can end during a sync, so the reconciler asks before each write.

Non-goals: the conflict check itself, the status JSON. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.algorithm.conditions import ConditionType, Event, EventReason, EventType, event_rescale
from controller.algorithm.decision import Decision
from controller.kube.objects import KIND, Autoscaler, Mode
from controller.kube.status import CONFLICTING_AUTOSCALER, PREVIEW, PREVIEW_MODE, ExtraCondition
from controller.report import Result

__all__ = ["Gates"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gates:
    native: bool
    paused: bool
    preview: bool
    conflict: str | None  # why another autoscaler conflicts (None: none does)

    @staticmethod
    def of(obj: Autoscaler, conflict: str | None) -> Gates:
        return Gates(native=obj.key.kind != KIND, paused=obj.paused, preview=obj.mode is Mode.PREVIEW,
                     conflict=conflict)  # fmt: skip

    @property
    def hold(self) -> Result | None:
        """Why this sync must not write `/scale`, as its result (None: it may)."""
        if self.paused:
            return Result.PAUSED
        if self.conflict is not None:
            return Result.CONFLICT
        if self.preview or self.native:
            return Result.PREVIEW
        return None

    @property
    def shows_would_scale(self) -> bool:
        """A held write the status still shows as `desiredReplicas` (a preview, also one that
        conflicts with the HPA it is to replace); a pause shows the held count."""
        return not self.paused and (self.preview or (self.native and self.conflict is None))

    def conditions(self, decision: Decision) -> tuple[ExtraCondition, ...]:
        """The conditions these gates add to a PromAutoscaler's status (none to a native HPA's)."""
        if self.native:
            return ()
        out: list[ExtraCondition] = []
        if self.conflict is not None:
            out.append(ExtraCondition(type=str(ConditionType.SCALING_ACTIVE), status=False,
                                      reason=CONFLICTING_AUTOSCALER, message=self.conflict))  # fmt: skip
        if self.preview:
            out.append(ExtraCondition(type=PREVIEW, status=True, reason=PREVIEW_MODE,
                                      message="spec.mode is Preview: decisions are recorded, the target's scale is "
                                              f"never written; last decision: {decision.desired_replicas} replicas"))
        return tuple(out)

    def events(self, decision: Decision) -> tuple[Event, ...]:
        """The conflict's Warning, else a preview's `PreviewRescale` when it would have scaled."""
        if self.conflict is not None:
            return (Event(type=EventType.WARNING, reason=EventReason.CONFLICTING_AUTOSCALER, message=self.conflict),)
        if self.preview and decision.write and not self.paused:
            return (Event(type=EventType.NORMAL, reason=EventReason.PREVIEW_RESCALE,
                          message="Preview: " + event_rescale(decision.desired_replicas, decision.rescale_reason)),)
        return ()
