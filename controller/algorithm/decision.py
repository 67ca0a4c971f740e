"""The result of one sync: a `Decision` with the `Trace` that explains it.

Users have asked upstream for years why an autoscaler did or did not scale; every decision here
carries the answer: per metric the value, its age, the ratio, the proposal and why; then each step
that changed the number (metric maximum, stabilization with the recommendation that won, rate
limit or min/max with the reason). `Decision.explain()` renders it for a person,
`Decision.to_dict()` as JSON-ready data for status annotations, events and logs.

Non-goals: deciding (see `decide`), writing anything. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.algorithm.behavior import Behavior, ScaleHistory
from controller.algorithm.conditions import Event, condition_key
from controller.algorithm.prediction import PredictionTrace
from controller.algorithm.spec import HpaStatus
from controller.algorithm.values import quick_init
from controller.algorithm.zero import ZeroStep


class Outcome(StrEnum):
    SCALE = "scale"  # a write of desired_replicas is needed (then call decide.complete)
    SCALED = "scaled"  # the write succeeded
    WRITE_FAILED = "write failed"
    NO_CHANGE = "no change"
    BLOCKED = "blocked by metric errors"
    DISABLED = "scaling disabled"
    FAILED_GET_SCALE = "failed to get scale"


class Stage(StrEnum):
    RANGE = "current replicas outside [min, max]"
    DISABLED = "target at 0 replicas with minReplicas > 0"
    METRICS = "maximum of the metric proposals"
    PREDICTION = "forecast ahead of the load"
    ZERO = "scale to zero: activation and cooldown"
    STABILIZATION = "stabilization window"
    LIMITS = "rate limits and [min, max]"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MetricTrace:
    index: int
    type: str
    name: str  # human name, or the metric's own name when it failed
    proposal: int | None
    why: str  # the rule that produced the proposal, or the error
    value: int | None = None  # reported value (milli-units) as in status
    utilization: int | None = None
    ratio: float | None = None
    new_ratio: float | None = None
    counted: int | None = None
    age_seconds: float | None = None
    ready: int | None = None
    unready: int = 0
    missing: int = 0
    ignored: int = 0

    def line(self) -> str:
        head = f"[{self.index}] {self.type} {self.name}"
        if self.proposal is None:
            return f"{head}: ERROR {self.why}"
        parts = []
        if self.utilization is not None:
            parts.append(f"utilization {self.utilization}% of request")
        if self.value is not None:
            parts.append(f"value {self.value}m")
        if self.ratio is not None:
            parts.append(f"ratio {self.ratio:.4g}")
        if self.new_ratio is not None:
            parts.append(f"rebalanced ratio {self.new_ratio:.4g}")
        if self.ready is not None:
            parts.append(f"pods ready {self.ready}/unready {self.unready}/missing {self.missing}"
                         f"/ignored {self.ignored}")  # fmt: skip
        if self.age_seconds is not None:
            parts.append(f"age {self.age_seconds:g}s")
        counted = f", {self.counted} pods counted" if self.counted is not None else ""
        return f"{head}: {', '.join(parts)} -> {self.proposal} ({self.why}{counted})"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TraceStep:
    stage: Stage
    before: int
    after: int
    reason: str
    note: str = ""

    def line(self) -> str:
        change = f"{self.before} -> {self.after}" if self.before != self.after else f"{self.after}"
        note = f"; {self.note}" if self.note else ""
        return f"{self.stage}: {change} ({self.reason}{note})"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    current: int
    metrics: tuple[MetricTrace, ...]
    steps: tuple[TraceStep, ...]
    final: int

    def to_dict(self) -> dict[str, object]:
        return {
            "current": self.current,
            "metrics": [_plain(m) for m in self.metrics],
            "steps": [_plain(s) for s in self.steps],
            "final": self.final,
        }


def _plain(obj: MetricTrace | TraceStep) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in obj.__slots__:
        value = getattr(obj, name)
        out[name] = str(value) if isinstance(value, StrEnum) else value
    return out


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    outcome: Outcome
    current_replicas: int
    desired_replicas: int  # what the controller wants the target at
    rescale_reason: str
    status: HpaStatus  # the status to write (if status_changed)
    previous_status: HpaStatus
    events: tuple[Event, ...]
    # Store this and pass it to the next sync. None only when the scale could not be read before
    # any history existed: the first successful sync must still record its initial recommendation.
    history: ScaleHistory | None
    error: str | None  # what reconcile reports as its error (None: clean sync)
    trace: Trace
    effective_behavior: Behavior | None = None
    prediction: PredictionTrace | None = None  # None: spec.prediction is Off (or the sync read no metrics)
    zero: ZeroStep | None = None  # None: no scale to zero (minReplicas > 0), or the sync read no metrics

    @property
    def write(self) -> bool:
        """A `/scale` write of `desired_replicas` is needed before `decide.complete`."""
        return self.outcome is Outcome.SCALE

    @property
    def status_changed(self) -> bool:
        """Upstream writes status only when it differs semantically (TestAvoidUnnecessaryUpdates)."""
        old, new = self.previous_status, self.status
        return (
            old.current_replicas != new.current_replicas
            or old.desired_replicas != new.desired_replicas
            or old.last_scale_time != new.last_scale_time
            or old.current_metrics != new.current_metrics
            or condition_key(old.conditions) != condition_key(new.conditions)
        )

    def explain(self) -> str:
        lines = [f"{self.outcome}: {self.current_replicas} -> {self.desired_replicas} replicas"
                 + (f" ({self.rescale_reason})" if self.rescale_reason else "")]  # fmt: skip
        lines += ["  metric " + m.line() for m in self.trace.metrics]
        if self.prediction is not None:
            lines.append(f"  prediction ({self.prediction.mode}): {self.prediction.why}")
            lines += ["    forecast " + m.line() for m in self.prediction.metrics]
        if self.zero is not None:
            lines.append(f"  scale to zero ({self.zero.activity}): {self.zero.why}")
        lines += ["  step " + s.line() for s in self.trace.steps]
        lines += [f"  condition {c.type}={'True' if c.status else 'False'} {c.reason}: {c.message}"
                  for c in self.status.conditions]  # fmt: skip
        if self.error:
            lines.append(f"  error: {self.error}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "outcome": str(self.outcome),
            "currentReplicas": self.current_replicas,
            "desiredReplicas": self.desired_replicas,
            "rescaleReason": self.rescale_reason,
            "error": self.error,
            "conditions": [c.to_dict() for c in self.status.conditions],
            "currentMetrics": [m.to_dict() if m else {} for m in self.status.current_metrics],
            "events": [e.to_dict() for e in self.events],
            "trace": self.trace.to_dict(),
            **({"prediction": self.prediction.to_dict()} if self.prediction is not None else {}),
            **({"scaleToZero": self.zero.to_dict()} if self.zero is not None else {}),
        }
