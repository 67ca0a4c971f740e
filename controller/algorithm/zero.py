"""Scale to zero: activation and cooldown, a rule of the algorithm (not a second controller).

With `minReplicas: 0` and at least one Object or External metric (the *activation metrics*), each
sync reads those metrics' raw values (an External metric's values summed, as the HPA sums them;
an Object metric's value) against their `target.activationValue` (default 0; KEDA's
`activationThreshold`):

* any activation metric **above** its activation value: the workload must run. At 0 replicas it
  wakes in this sync, to what the HPA algorithm asks for and at least 1 (no 0 -> 1 -> N
  staircase); running, it never goes below 1, and the cooldown restarts;
* every activation metric read and **at or below** its value: idle. The idle time starts at the
  first such sync (`ScaleHistory.idle_since`, carried and checkpointed like the rest of the
  history). Once it reaches `spec.scaleToZero.cooldownSeconds` (a PromAutoscaler's default 300;
  0 without `scale_to_zero`, as upstream's HPAScaleToZero) the recommendation is 0, and the
  scale-down stabilization window and policies apply to it as to any scale-down; at 0 it holds;
  not while the other metrics or the forecast ask for more replicas than run (`held_while_busy`);
* an activation metric **could not be read**: unknown. Running, it never goes to 0 (and the
  cooldown restarts); at 0 it stays at 0 (an outage neither wakes nor scales).

At 0 replicas Pods and Resource metrics cannot be read (there are no pods) and do not block.

Non-goals: the HPA arithmetic above one replica (`multi_metric`, `behavior`), where the idle
time is stored (reconcile). Pure: no I/O, no clock reads (`now` is a parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from controller.algorithm.conditions import Event, EventReason, EventType
from controller.algorithm.multi_metric import MetricResult
from controller.algorithm.ratio import saturating_sum
from controller.algorithm.spec import (
    AutoscalerSpec, ExternalSamples, MetricSpec, ObjectSample, Observation, SourceType,
)  # fmt: skip
from controller.algorithm.values import quick_init

__all__ = ["NOT_READ", "Activity", "Reading", "ZeroStep", "activation_indices", "cooldown_seconds", "counted",
           "enabled", "held_while_busy", "milli_text", "not_read", "recommendation", "zero_events", "zero_step"]

_ACTIVATION_TYPES = (SourceType.OBJECT, SourceType.EXTERNAL)
NOT_READ = "not read at 0 replicas (no pods); does not block"  # the trace's why of a Pods/Resource metric at 0


class Activity(StrEnum):
    ACTIVE = "active"  # an activation metric is above its activation value
    IDLE = "idle"  # every activation metric is at or below its activation value
    UNKNOWN = "unknown"  # an activation metric could not be read


def activation_indices(spec: AutoscalerSpec) -> tuple[int, ...]:
    """The indices of `spec.metrics` that are activation metrics (Object and External)."""
    return tuple(i for i, m in enumerate(spec.metrics) if m.type in _ACTIVATION_TYPES)


def enabled(spec: AutoscalerSpec) -> bool:
    """Scale to zero applies: `minReplicas: 0` and at least one activation metric."""
    return spec.min_replicas == 0 and any(m.type in _ACTIVATION_TYPES for m in spec.metrics)


def cooldown_seconds(spec: AutoscalerSpec) -> int:
    """`spec.scaleToZero.cooldownSeconds`; without `scale_to_zero` (a native HPA under upstream's
    HPAScaleToZero gate) 0: the HPA goes to 0 as soon as the metrics ask for it."""
    return 0 if spec.scale_to_zero is None else spec.scale_to_zero.cooldown_seconds


def milli_text(milli: int) -> str:
    """A milli-unit value as a quantity: 35000 -> "35", 1500 -> "1500m"."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """One activation metric this sync: its raw value (None: not read) against its activation value."""

    index: int
    name: str  # e.g. "External queue_messages"
    value: int | None  # milli-units
    activation: int  # milli-units
    error: str = ""

    @property
    def active(self) -> bool:
        return self.value is not None and self.value > self.activation

    def line(self) -> str:
        if self.value is None:
            return f"{self.name} could not be read ({self.error})"
        sign = ">" if self.active else "<="
        return f"{self.name} {milli_text(self.value)} {sign} activation {milli_text(self.activation)}"


def _reading(index: int, spec: MetricSpec, obs: Observation | None) -> Reading:
    name = f"{spec.type} {spec.name}"
    activation = (spec.target.activation_value if spec.target is not None else None) or 0
    if isinstance(obs, ObjectSample) and spec.type == SourceType.OBJECT:
        return Reading(index=index, name=name, value=obs.value, activation=activation)
    if isinstance(obs, ExternalSamples) and spec.type == SourceType.EXTERNAL and obs.values:
        return Reading(index=index, name=name, value=saturating_sum(obs.values), activation=activation)
    error = getattr(obs, "message", "") or "no value returned"
    return Reading(index=index, name=name, value=None, activation=activation, error=error)


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroStep:
    """The rule's verdict for one sync."""

    activity: Activity
    readings: tuple[Reading, ...]
    at_zero: bool  # the target is at 0 replicas now
    floor: int  # the lowest count this sync may end at: 0 (idle for the whole cooldown, or at 0) or 1
    idle_since: float | None  # the new `ScaleHistory.idle_since`
    cooldown: int  # seconds
    why: str  # one line for the trace, `explain`, conditions and events
    idle_for: float = 0.0  # seconds every activation metric has been at or below its activation value (0: not idle)

    @property
    def wake(self) -> bool:
        """At 0 and active: scale up in this sync (to at least 1)."""
        return self.at_zero and self.activity is Activity.ACTIVE

    @property
    def remaining(self) -> float | None:
        """Cooldown seconds left while running and idle (0 once over; None: not counting)."""
        if self.activity is not Activity.IDLE or self.at_zero:
            return None
        return max(0.0, self.cooldown - self.idle_for)

    @property
    def to_zero(self) -> bool:
        """Running, and idle for the whole cooldown: the recommendation is 0."""
        return not self.at_zero and self.floor == 0

    def to_dict(self) -> dict[str, object]:
        return {"activity": str(self.activity), "atZero": self.at_zero, "wake": self.wake, "floor": self.floor,
                "idleSince": self.idle_since, "idleSeconds": self.idle_for, "cooldownSeconds": self.cooldown,
                "remainingSeconds": self.remaining,
                "why": self.why,
                "metrics": [{"index": r.index, "name": r.name, "value": r.value, "activation": r.activation,
                             "error": r.error} for r in self.readings]}  # fmt: skip

    @property
    def decisive(self) -> Reading | None:
        """The reading that decided: the first active one, else the first unread one, else the first."""
        for test in (lambda r: r.active, lambda r: r.value is None):
            for r in self.readings:
                if test(r):
                    return r
        return self.readings[0] if self.readings else None


def zero_step(spec: AutoscalerSpec, *, current: int, observations: Sequence[Observation], idle_since: float | None,
              now: float) -> ZeroStep:
    """Apply activation and cooldown to this sync's observations (same index as `spec.metrics`)."""
    readings = tuple(_reading(i, spec.metrics[i], observations[i] if i < len(observations) else None)
                     for i in activation_indices(spec))
    cooldown = cooldown_seconds(spec)
    at_zero = current == 0
    if any(r.active for r in readings):
        first = next(r for r in readings if r.active)
        why = ("woken: " if at_zero else "active: ") + first.line()
        return ZeroStep(activity=Activity.ACTIVE, readings=readings, at_zero=at_zero, floor=1, idle_since=None,
                        cooldown=cooldown, why=why)
    unread = [r for r in readings if r.value is None]
    if unread or not readings:
        line = unread[0].line() if unread else "no activation metric"
        why = f"{line}: stays at 0" if at_zero else f"{line}: never scales to 0, the cooldown restarts"
        return ZeroStep(activity=Activity.UNKNOWN, readings=readings, at_zero=at_zero, floor=0 if at_zero else 1,
                        idle_since=None, cooldown=cooldown, why=why)
    since = now if idle_since is None else min(idle_since, now)
    idle_for = now - since
    left = cooldown - idle_for
    idle_line = "; ".join(r.line() for r in readings)
    if at_zero:
        why = f"idle at 0: {idle_line}"
    elif left <= 0:
        why = f"idle for the whole cooldown of {cooldown}s: {idle_line}"
    else:
        why = f"cooldown: {left:.0f}s of {cooldown}s left before 0 replicas ({idle_line})"
    return ZeroStep(activity=Activity.IDLE, readings=readings, at_zero=at_zero, floor=0 if at_zero or left <= 0 else 1,
                    idle_since=since, cooldown=cooldown, why=why, idle_for=idle_for)


# What `decide` does with a `ZeroStep` (kept here so the rule reads in one place).


def not_read(step: ZeroStep | None, spec: MetricSpec) -> bool:
    """At 0 replicas a Pods or Resource metric is not read: there are no pods, and it does not block."""
    return step is not None and step.at_zero and spec.type not in _ACTIVATION_TYPES


def skipped(index: int, spec: MetricSpec) -> MetricResult:
    """The trace entry of a metric `not_read` (no proposal, no failure, no event)."""
    return MetricResult(index=index, spec=spec, error=NOT_READ)


def counted(step: ZeroStep | None, results: Sequence[MetricResult]) -> list[MetricResult]:
    """The results the multi-metric combination counts (those of metrics not read are left out)."""
    return list(results) if step is None else [r for r in results if not not_read(step, r.spec)]


def held_while_busy(step: ZeroStep | None, *, proposal: int, current: int) -> ZeroStep | None:
    """Idle activation metrics do not take a workload to 0 while its other metrics (or the forecast)
    ask for more replicas than run: the pods are still working off what the queue no longer shows.
    The HPA under upstream's HPAScaleToZero takes the maximum of all proposals and would not go to 0
    either; the idle time keeps counting, so it goes once the pods are no longer busy."""
    if step is None or not step.to_zero or proposal <= current:
        return step
    why = f"{step.why}; held at {current}: the other metrics ask for {proposal} replicas"
    return replace(step, floor=1, why=why)


def recommendation(step: ZeroStep | None, prenormalized: int) -> int | None:
    """The recommendation after the rule: at least 1 on waking, 0 once idle for the whole cooldown
    (then stabilization and the policies apply to it as to any scale-down); None: the rule does not
    change it."""
    if step is None or (not step.wake and not step.to_zero):
        return None
    return max(1, prenormalized) if step.wake else 0


def zero_events(step: ZeroStep | None, *, current: int, desired: int) -> tuple[Event, ...]:
    """Normal events when this sync goes to 0 or wakes from it, naming the metric and value."""
    if step is None:
        return ()
    if step.wake and desired > 0:
        decisive = step.decisive
        line = decisive.line() if decisive is not None else step.why
        return (Event(type=EventType.NORMAL, reason=EventReason.WOKEN_FROM_ZERO,
                      message=f"waking from 0 to {desired} replicas: {line}"),)  # fmt: skip
    if current > 0 and desired == 0:
        return (Event(type=EventType.NORMAL, reason=EventReason.SCALED_TO_ZERO,
                      message=f"scaling {current} -> 0 replicas: {step.why}"),)  # fmt: skip
    return ()
