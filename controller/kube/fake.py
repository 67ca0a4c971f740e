"""Map-backed fakes of the controller's kube ports, for reconcile tests and dry runs.

Job: behave like the real implementations as far as a caller can observe: `FakeScaleClient`
keeps one Scale per target with a resourceVersion that moves on every write, answers a write
with a stale resourceVersion with 409, and can be told to fail reads or writes or to answer a
number of 409s (retried by the real client's own loop, `scale.update_on_conflict_retry`);
`FakePodLister` matches label selectors with the same parser as the real lister; `FakeStatusWriter` keeps the
last status per object and the write log; `FakeEventSink` records every event it is given.
Each is assigned to a Protocol-typed name at the bottom so mypy proves it fits its port.

Non-goals: timing, aggregation of events (the real sink's correlator is tested on its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from controller.algorithm.conditions import Event
from controller.algorithm.pods import PodInfo
from controller.kube.ports import EventSink, ObjectKey, PodLister, ScaleClient, ScaleInfo, StatusWriter, TargetRef
from controller.kube.scale import update_on_conflict_retry
from kubecommon.kube.errors import KubeAPIError, KubeError, UnknownKind
from kubecommon.kube.resources import split_api_version
from kubecommon.selectors import parse_selector
from kubecommon.status import status_error_from_dict

__all__ = ["FakeEventSink", "FakePodLister", "FakeScaleClient", "FakeStatusWriter", "RecordedEvent", "api_error",
           "conflict_error", "target_key"]



async def _no_wait(_seconds: float) -> None:
    return None


def target_key(namespace: str, ref: TargetRef) -> tuple[str, str, str, str]:
    """How `FakeScaleClient` keys a target (its error and conflict maps too): only the group counts."""
    group, _version = split_api_version(ref.api_version, ref.kind)
    return namespace, group, ref.kind, ref.name


def conflict_error(path: str) -> KubeAPIError:
    """The 409 the API server answers a write carrying a stale resourceVersion."""
    return api_error(409, "Conflict", "Operation cannot be fulfilled on scale: the object has been modified; "
                     "please apply your changes to the latest version and try again", method="PUT", path=path)


def api_error(code: int, reason: str, message: str, *, method: str = "GET", path: str = "") -> KubeAPIError:
    """A `KubeAPIError` as the client raises it for an API server Status answer."""
    body = {"kind": "Status", "code": code, "reason": reason, "message": message}
    return KubeAPIError(status_error_from_dict(body, code), method=method, path=path)


class FakeScaleClient:
    """Scales keyed by (namespace, group, kind, name); only the group of apiVersion matters."""

    def __init__(self) -> None:
        self.scales: dict[tuple[str, str, str, str], ScaleInfo] = {}
        self.get_errors: dict[tuple[str, str, str, str], KubeError] = {}
        self.update_errors: dict[tuple[str, str, str, str], KubeError] = {}
        self.conflicts: dict[tuple[str, str, str, str], int] = {}  # 409s to answer before succeeding
        self.updates: list[tuple[str, str, int]] = []  # (namespace, name, replicas) per successful write
        self.gets = 0
        self._rv = 1000

    def set(self, namespace: str, ref: TargetRef, *, replicas: int, status_replicas: int | None = None,
            selector: str = "") -> ScaleInfo:
        self._rv += 1
        info = ScaleInfo(spec_replicas=replicas, selector=selector, resource_version=str(self._rv),
                         status_replicas=replicas if status_replicas is None else status_replicas)
        self.scales[target_key(namespace, ref)] = info
        return info

    async def get(self, namespace: str, ref: TargetRef) -> ScaleInfo:
        key = target_key(namespace, ref)
        self.gets += 1
        if key in self.get_errors:
            raise self.get_errors[key]
        if key not in self.scales:
            group = key[1]
            if not self._kind_known(group, ref.kind):
                raise UnknownKind(group, ref.kind)
            raise api_error(404, "NotFound", f'{ref.kind.lower()}s "{ref.name}" not found',
                            path=f"{namespace}/{ref.name}/scale")
        return self.scales[key]

    def _kind_known(self, group: str, kind: str) -> bool:
        return any(k[1] == group and k[2] == kind for k in self.scales)

    async def update(self, namespace: str, ref: TargetRef, replicas: int, scale: ScaleInfo) -> ScaleInfo:
        """The real client's retry loop (`update_on_conflict_retry`) around `_put`, without waiting."""
        return await update_on_conflict_retry(lambda current: self._put(namespace, ref, replicas, current),
                                              lambda: self.get(namespace, ref), replicas, scale,
                                              sleep=_no_wait, jitter=lambda: 0.0)  # fmt: skip

    async def _put(self, namespace: str, ref: TargetRef, replicas: int, read: ScaleInfo) -> ScaleInfo:
        """One PUT as the API server answers it: an injected error, a 409 for each pending conflict
        (another writer moves the resourceVersion) or for a stale resourceVersion, else the write."""
        key, path = target_key(namespace, ref), f"{namespace}/{ref.name}/scale"
        if key in self.update_errors:
            raise self.update_errors[key]
        stored = self.scales.get(key)
        if stored is None:
            raise api_error(404, "NotFound", f'{ref.kind.lower()}s "{ref.name}" not found', method="PUT", path=path)
        if self.conflicts.get(key, 0) > 0:
            self.conflicts[key] -= 1
            self._rv += 1
            self.scales[key] = replace(stored, resource_version=str(self._rv))  # someone else wrote
            raise conflict_error(path)
        if read.resource_version != stored.resource_version:
            raise conflict_error(path)
        self._rv += 1
        written = replace(stored, spec_replicas=replicas, resource_version=str(self._rv))
        self.scales[key] = written
        self.updates.append((namespace, ref.name, replicas))
        return written


class FakePodLister:
    """Pods per namespace with their labels; `pods` filters with the real selector parser."""

    def __init__(self) -> None:
        self.by_namespace: dict[str, list[tuple[Mapping[str, str], PodInfo]]] = {}

    def add(self, namespace: str, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self.by_namespace.setdefault(namespace, []).append((dict(labels), pod))

    def remove(self, namespace: str, name: str) -> None:
        self.by_namespace[namespace] = [(labels, pod) for labels, pod in self.by_namespace.get(namespace, [])
                                        if pod.name != name]

    def pods(self, namespace: str, selector: str) -> Sequence[PodInfo]:
        parsed = parse_selector(selector)
        return [pod for labels, pod in self.by_namespace.get(namespace, []) if parsed.matches(labels)]


class FakeStatusWriter:
    """Last status per object; `gone` objects are skipped like the real writer skips a 404."""

    def __init__(self) -> None:
        self.statuses: dict[ObjectKey, Mapping[str, Any]] = {}
        self.writes: list[ObjectKey] = []
        self.errors: dict[ObjectKey, KubeError] = {}
        self.gone: set[ObjectKey] = set()

    async def write(self, key: ObjectKey, status: Mapping[str, Any]) -> None:
        if key in self.errors:
            raise self.errors[key]
        if key in self.gone:
            return
        self.writes.append(key)
        self.statuses[key] = dict(status)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedEvent:
    key: ObjectKey
    uid: str
    event: Event


@dataclass(slots=True)
class FakeEventSink:
    """Every emitted event, in order (no aggregation or rate limit)."""

    recorded: list[RecordedEvent] = field(default_factory=list)

    def emit(self, key: ObjectKey, uid: str, events: Sequence[Event]) -> None:
        self.recorded.extend(RecordedEvent(key=key, uid=uid, event=event) for event in events)

    def reasons(self, key: ObjectKey | None = None) -> list[str]:
        return [str(r.event.reason) for r in self.recorded if key is None or r.key == key]


def _protocol_checks() -> None:
    """mypy proves each fake satisfies its port (Go's `var _ I = &T{}`)."""
    scale: ScaleClient = FakeScaleClient()
    pods: PodLister = FakePodLister()
    status: StatusWriter = FakeStatusWriter()
    events: EventSink = FakeEventSink()
    del scale, pods, status, events
