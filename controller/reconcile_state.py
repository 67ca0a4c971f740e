"""What the reconciler remembers between syncs: of each autoscaler (`ObjectState`), and which
autoscalers selected which pods (`PodClaims`).

* the `ScaleHistory` the next decision needs, restored once from the status checkpoint, and the
  history that checkpoint holds (`covers`: whether a save would add anything a restart can use);
* the status JSON this process last wrote (`previous_status`: the baseline of the write rule, so
  a lagging watch cache never causes a second write);
* what it announced: a pause and the forecast's fallback to reactive scaling (`announce_pause`,
  `announce_forecast`: an event when either changed), and the events of its last sync with when
  they were emitted (`unrepeated`: a retry soon after does not repeat them);
* the last report, for explain, preview and the shutdown checkpoint.

Non-goals: building the status (`controller.kube.status`), I/O. Pure: `now` is a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Event, EventReason, EventType
from controller.algorithm.decision import Decision
from controller.algorithm.history_rules import restorable
from controller.kube.cached import same_status
from controller.kube.prediction_status import fallback_transition
from controller.report import SyncReport

__all__ = ["ObjectState", "PodClaims"]


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

    def previous_status(self, cached: Mapping[str, Any], version: str) -> Mapping[str, Any]:
        """The status the write rule compares against: what this process last wrote (a lagging
        watch cache must not cause a second write), else the cached one. Once the watch echoes the
        written status back unchanged, the cache's copy takes its place, so each object's status is
        held once (compared once per cached resourceVersion)."""
        written = self.written
        if written is None or written is cached:
            return cached
        if self.echo_compared != version:
            self.echo_compared = version
            if same_status(written, cached):  # equal but for what the cache leaves out (controller.kube.cached)
                self.written = cached
                return cached
        return written

    def covers(self, decision: Decision) -> bool:
        """The checkpoint in status already restores to this decision's history (no timed save due)."""
        history = decision.history
        return history is None or restorable(self.checkpointed, history, decision.current_replicas)

    def announce_pause(self, paused: bool, *, holding: int) -> tuple[Event, ...]:
        """`Paused` / `Unpaused` when `spec.paused` changed since the last sync (or since the
        status's `Paused` condition, after a restart)."""
        if paused == self.paused:
            return ()
        self.paused = paused
        reason = EventReason.PAUSED if paused else EventReason.UNPAUSED
        text = (f"scaling paused by spec.paused; holding {holding} replicas" if paused
                else "spec.paused cleared; scaling resumes")  # fmt: skip
        return (Event(type=EventType.NORMAL, reason=reason, message=text),)

    def announce_forecast(self, status: Mapping[str, Any], decision: Decision) -> tuple[Event, ...]:
        """`ForecastFallback` / `ForecastRecovered` when the accuracy guard changed its verdict since
        the last sync (or since the verdict in `status`, the last written, after a restart)."""
        self.forecast_fallback, events = fallback_transition(self.forecast_fallback, status, decision.prediction)
        return events

    def unrepeated(self, events: tuple[Event, ...], *, now: float, within: float) -> tuple[Event, ...]:
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
            last = self.announced.get(key)
            if last is not None and now - last < within:
                announced[key] = last
                continue
            announced.setdefault(key, now)
            kept.append(event)
        self.announced = announced
        return tuple(kept)


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
