"""The control loop: watch-cache changes → the due-time queue → reconcile, with conflicts and telemetry.

`AutoscalerLoop.apply_changes(kind, changed)` is called with the keys a watch cache saw change
(`ObjectCache(track_changes=True).take_changes()`, each looked up: None = deleted), so its cost
follows the changes, not the number of objects; `on_cache_change(kind, objects)` takes a whole
cache and reduces it to the same call. Per changed key it compares uid/resourceVersion with what
it knows and converts only new versions: a new object or spec fully (`autoscaler_from_object`),
a status-only change (same uid, generation and spec: usually our own status write echoed back)
by re-reading just the status (`with_new_status`), which the next sync uses as its previous
status and history checkpoint. It queues new objects and
generation bumps for an immediate sync, updates periods (`spec.syncPeriodSeconds`, else the
`--horizontal-pod-autoscaler-sync-period` default), drops deleted objects from the queue,
the reconciler's memory and the per-object gauges, and recomputes the conflict map. `sync(key)`
is the worker callback: one reconcile of the current version of the object.

Kinds in `claim_only` (native HPAs without `--preview-native-hpas`) are read for the conflict
guard only: never queued or synced. A PromAutoscaler whose spec cannot be used (`SpecError`: it
breaks an HPA validation rule, stored before the CRD was upgraded or with validation off) is
logged and counted once per version of its spec and queued like any other, but its syncs only
report it (`Reconciler.sync_invalid`: conditions, observedGeneration, one Warning event); it
never gets scaled. A native HPA with such a spec is only logged (the built-in controller owns
its status and events).

Non-goals: the watch itself (kubecommon.kube.cache), the sync's steps (controller.reconcile),
exporting metrics (controller.telemetry implements `LoopObserver`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from controller.conflicts import Claim, find_conflicts
from controller.kube.objects import KIND, Autoscaler, SpecError, autoscaler_from_object, with_new_status
from controller.kube.ports import ObjectKey
from controller.reconcile import InvalidAutoscaler, Reconciler
from controller.report import SyncOutcome, WriteResult
from controller.run.queue import DueQueue
from kubecommon.kube.objects import KubeObject

__all__ = ["AutoscalerLoop", "LoopObserver"]

_log = logging.getLogger(__name__)


class LoopObserver(Protocol):
    def observe_sync(self, outcome: SyncOutcome, seconds: float) -> None: ...

    def observe_invalid_spec(self, key: ObjectKey) -> None: ...

    def forget_object(self, key: ObjectKey) -> None: ...

    def set_object_count(self, kind: str, count: int) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class _Known:
    uid: str
    resource_version: str
    generation: int
    period: float
    autoscaler: Autoscaler | None  # None: the spec could not be used
    invalid: InvalidAutoscaler | None = None  # a PromAutoscaler whose spec could not be used: report it


class AutoscalerLoop:
    def __init__(self, reconciler: Reconciler, queue: DueQueue[ObjectKey], *, clock: Callable[[], float],
                 observer: LoopObserver, default_period: float = 15.0, claim_only: frozenset[str] = frozenset(),
                 wake: Callable[[], None] = lambda: None,
                 timer: Callable[[], float] = time.perf_counter) -> None:  # fmt: skip
        """`clock` schedules (the queue's due times); `timer` measures sync durations: the event
        loop's clock under uvloop counts whole milliseconds, too coarse for the 1 ms buckets."""
        self._reconciler = reconciler
        self._timer = timer
        self._default_period = default_period
        self._claim_only = claim_only  # kinds read only for the conflict guard, never synced
        self._queue = queue
        self._clock = clock
        self._observer = observer
        self._wake = wake
        self._known: dict[str, dict[ObjectKey, _Known]] = {}
        self._conflicts: Mapping[ObjectKey, str] = {}
        self._last_error: dict[ObjectKey, str] = {}  # log an error when it changes, not every retry

    def autoscaler(self, key: ObjectKey) -> Autoscaler | None:
        known = self._known.get(key.kind, {}).get(key)
        return known.autoscaler if known else None

    def conflict(self, key: ObjectKey) -> str | None:
        return self._conflicts.get(key)

    # --- cache changes -------------------------------------------------------------------------
    def on_cache_change(self, kind: str, objects: Sequence[KubeObject]) -> None:
        """The whole cache of `kind`: objects missing from it were deleted."""
        changed: dict[tuple[str, str], KubeObject | None] = {(obj.namespace, obj.name): obj for obj in objects}
        for key in self._known.get(kind, {}):
            changed.setdefault((key.namespace, key.name), None)
        self.apply_changes(kind, changed)

    def apply_changes(self, kind: str, changed: Mapping[tuple[str, str], KubeObject | None]) -> None:
        """`(namespace, name)` → the object's current version (None: deleted) for the keys that changed."""
        known = self._known.setdefault(kind, {})
        now = self._clock()
        woke = False
        claims_changed = False  # only then can conflicts differ (status writes, the usual change, cannot)
        for (namespace, name), obj in changed.items():
            key = ObjectKey(kind=kind, namespace=namespace, name=name)
            old = known.get(key)
            if obj is None:
                if old is not None:
                    self._forget(key)
                    del known[key]
                    woke = claims_changed = True
                continue
            if old is not None and old.uid == obj.uid and old.resource_version == obj.resource_version:
                continue
            new = self._convert(kind, key, obj, old)
            known[key] = new
            woke = True
            claims_changed = claims_changed or _target(old) != _target(new)
            self._enqueue(key, old, new, now)
        self._observer.set_object_count(kind, len(known))
        if claims_changed:
            self._conflicts = find_conflicts(
                Claim(key=key, target=k.autoscaler.target)
                for per_kind in self._known.values() for key, k in per_kind.items() if k.autoscaler is not None
            )  # fmt: skip
        if woke:
            self._wake()

    def _forget(self, key: ObjectKey) -> None:
        self._queue.remove(key)
        self._reconciler.forget(key)
        self._observer.forget_object(key)
        self._last_error.pop(key, None)

    def _convert(self, kind: str, key: ObjectKey, obj: KubeObject, old: _Known | None) -> _Known:
        raw: Mapping[str, Any] = obj.raw or {}
        generation = int((raw.get("metadata") or {}).get("generation") or 0)
        if old is not None and old.autoscaler is not None and old.uid == obj.uid and old.generation == generation \
                and raw.get("spec") == old.autoscaler.spec_json:
            return _Known(uid=obj.uid, resource_version=obj.resource_version, generation=generation,
                          period=old.period, autoscaler=with_new_status(old.autoscaler, raw))  # fmt: skip
        if old is not None and old.invalid is not None and old.uid == obj.uid and old.generation == generation \
                and raw.get("spec") == old.invalid.spec_json:  # our status write echoed back
            return replace(old, resource_version=obj.resource_version,
                           invalid=replace(old.invalid, status_json=_status(raw)))
        invalid: InvalidAutoscaler | None = None
        try:
            autoscaler: Autoscaler | None = autoscaler_from_object({**raw, "kind": kind})
        except SpecError as err:
            autoscaler = None
            if kind in self._claim_only:
                _log.debug("%s %s: unreadable, not considered for conflicts: %s", kind, key, err)
            else:
                _log.warning("%s %s: not scaled, its spec is invalid: %s", kind, key, err)
                self._observer.observe_invalid_spec(key)
            if kind == KIND:
                invalid = InvalidAutoscaler(key=key, uid=obj.uid, generation=generation, spec_json=raw.get("spec"),
                                            status_json=_status(raw), error=str(err))  # fmt: skip
        own_period = (raw.get("spec") or {}).get("syncPeriodSeconds") is not None and kind == KIND
        period = float(autoscaler.sync_period_seconds) if autoscaler and own_period else self._default_period
        return _Known(uid=obj.uid, resource_version=obj.resource_version, generation=generation, period=period,
                      autoscaler=autoscaler, invalid=invalid)  # fmt: skip

    def _enqueue(self, key: ObjectKey, old: _Known | None, new: _Known, now: float) -> None:
        if key.kind in self._claim_only:
            return
        if new.autoscaler is None and new.invalid is None:
            self._queue.remove(key)
            return
        created = old is None or old.uid != new.uid
        if created and old is not None:
            self._reconciler.forget(key)  # deleted and re-created under the same name
        spec_changed = created or old is None or old.generation != new.generation \
            or (old.autoscaler is None) != (new.autoscaler is None)
        self._queue.add(key, uid=new.uid, period=new.period, now=now,
                        immediate=spec_changed)  # fmt: skip

    # --- the worker callback -------------------------------------------------------------------
    async def sync(self, key: ObjectKey) -> bool:
        known = self._known.get(key.kind, {}).get(key)
        if known is None or key.kind in self._claim_only:
            return True  # deleted since it was queued
        if known.invalid is not None:
            started = self._timer()
            reported = await self._reconciler.sync_invalid(known.invalid)
            self._observer.observe_sync(reported, self._timer() - started)  # a sync too (error="spec")
            return reported.status_write is not WriteResult.ERROR  # nothing else to retry sooner
        autoscaler = known.autoscaler
        if autoscaler is None:
            return True  # deleted, or its spec became unusable, since it was queued
        started = self._timer()
        conflict = self._conflicts.get(key) if key.kind == KIND else None
        outcome = await self._reconciler.sync(autoscaler, conflict=conflict)
        self._observer.observe_sync(outcome, self._timer() - started)
        if key not in self._known.get(key.kind, {}):  # deleted during the sync: drop the series it put back
            self._observer.forget_object(key)
        if outcome.error != self._last_error.get(key):
            if outcome.error:
                _log.info("%s %s: %s", key.kind, key, outcome.error)
            else:
                _log.info("%s %s: recovered (%s)", key.kind, key, outcome.result)
        if outcome.error:
            self._last_error[key] = outcome.error
        else:
            self._last_error.pop(key, None)
        return not outcome.failed

    def keys(self) -> list[ObjectKey]:
        return [key for per_kind in self._known.values() for key in per_kind]


def _status(raw: Mapping[str, Any]) -> dict[str, Any]:
    status = raw.get("status")
    return dict(status) if isinstance(status, Mapping) else {}


def _target(known: _Known | None) -> object:
    return known.autoscaler.target if known is not None and known.autoscaler is not None else None
