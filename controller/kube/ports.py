"""Ports reconcile talks to: the target's `/scale`, the selected pods, status, events.

Each Protocol is owned by its consumer (reconcile), narrow, and has a real implementation on
`kubecommon.kube` plus a map-backed fake (`controller.kube.fake`). Values crossing the ports are
frozen dataclasses; no Kubernetes JSON reaches reconcile.

Non-goals: retries policy beyond what each method states, caching decisions, leader election.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controller.algorithm.conditions import Event
from controller.algorithm.pods import PodInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectKey:
    """Which autoscaler: a PromAutoscaler (`kind="PromAutoscaler"`) or a previewed native HPA."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetRef:
    """`spec.scaleTargetRef`: apiVersion (group/version or version), kind, name."""

    api_version: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleInfo:
    """What GET `/scale` answered. `selector` is `status.selector` ("" when the target has none)."""

    spec_replicas: int
    status_replicas: int
    selector: str
    resource_version: str


class ScaleClient(Protocol):
    """The target's `/scale` subresource, found through discovery (CRDs included).

    `get` raises `kubecommon.kube.errors.KubeError` (or `UnknownResource` when no mapping serves
    the kind); `update` writes with the read resourceVersion and retries a 409 by re-reading
    and re-applying the same replicas (bounded), raising the last error when it gives up.
    """

    async def get(self, namespace: str, ref: TargetRef) -> ScaleInfo: ...

    async def update(self, namespace: str, ref: TargetRef, replicas: int, scale: ScaleInfo) -> ScaleInfo: ...


class PodLister(Protocol):
    """Pods from a watch cache (never a LIST per sync). Raises `SelectorError` on a bad selector."""

    def pods(self, namespace: str, selector: str) -> Sequence[PodInfo]: ...


class StatusWriter(Protocol):
    """Writes an object's `status` subresource (the whole status, built by controller.kube.status)."""

    async def write(self, key: ObjectKey, status: Mapping[str, Any]) -> None: ...


class EventSink(Protocol):
    """Records Kubernetes Events for an object with upstream's aggregation and rate limits."""

    def emit(self, key: ObjectKey, uid: str, events: Sequence[Event]) -> None: ...
