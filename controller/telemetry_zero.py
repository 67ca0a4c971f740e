"""The controller's per-object scale-to-zero series on `/metrics` (part of controller.telemetry).

Per autoscaler with `minReplicas: 0` and an Object or External metric, from its last decision's
`ZeroStep` (`controller.algorithm.zero`), labelled as the other per-object gauges:
`idle_seconds` (how long every activation metric has been at or below its activation value;
0 while one is above it or cannot be read) and `scaled_to_zero` (1 while the target is at 0
replicas, else 0). An object without scale to zero has neither series; an object's series go when
it is deleted, turns scale to zero off or this replica stops leading.

Non-goals: deciding; the registry and the HTTP endpoint (controller.telemetry).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.algorithm.zero import ZeroStep
from controller.kube.ports import ObjectKey
from controller.telemetry_series import ObjectGauge

__all__ = ["ZeroGauges"]

_OBJECT_LABELS = ["kind", "namespace", "name"]


class ZeroGauges:
    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        self.idle = ObjectGauge(f"{prefix}_idle_seconds", "Scale to zero: seconds every activation metric (Object/"
                                "External) has been at or below its activation value (0 while one is above it or "
                                "unread).", _OBJECT_LABELS, registry=registry)  # fmt: skip
        self.at_zero = ObjectGauge(f"{prefix}_scaled_to_zero", "Scale to zero: 1 while the target is at 0 "
                                   "replicas, else 0.", _OBJECT_LABELS, registry=registry)  # fmt: skip
        self._shown: set[ObjectKey] = set()

    def show(self, key: ObjectKey, step: ZeroStep | None) -> None:
        """Set this object's series from its last decision's step (None: no scale to zero, or no metrics read)."""
        labels = (key.kind, key.namespace, key.name)
        if step is None:
            if key in self._shown:
                self.forget(key)
            return
        self._shown.add(key)
        self.idle.labels(*labels).set(step.idle_for)
        self.at_zero.labels(*labels).set(1.0 if step.at_zero and not step.wake else 0.0)

    def forget(self, key: ObjectKey) -> None:
        if key in self._shown:
            self._shown.discard(key)
            for gauge in (self.idle, self.at_zero):
                gauge.remove(key.kind, key.namespace, key.name)
