"""`CachedPodLister`: the pods a target's selector selects, from a watch cache (ports.PodLister).

Job: answer `pods(namespace, selector)` from an `ObjectCache` of pods (one cache per watched
namespace, or one for the cluster) that converts each pod version, as it enters the cache, to
the algorithm's `PodInfo` (`KubeObject.value`; the pod's JSON is not kept): phase, the PodReady
condition and its lastTransitionTime, startTime, deletionTimestamp, container requests in
milli-units, restartable init containers (sidecars), pod-level requests and the RuntimeClass
overhead. Parsed selectors are remembered per text, so a sync over a large selection does no
repeated parsing; the selection itself is remembered per (namespace, selector) until that
namespace of the cache changes, so a steady namespace costs one lookup per sync, not a scan.
Before the cache has listed once, `pods` raises `CacheNotSynced`: an empty
answer would look like "no pods" and must never drive a decision.

Non-goals: listing per sync, metrics, grouping (the algorithm groups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from sys import intern
from typing import Any

from controller.algorithm.pods import ContainerInfo, PodInfo, PodPhase, ReadyStatus
from controller.kube.ports import PodLister
from controller.kube.times import parse_time
from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import CacheNotSynced
from kubecommon.kube.objects import KubeObject
from kubecommon.kube.resources import ResourceInfo
from kubecommon.lru import LRUCache
from kubecommon.quantity import Quantity, QuantityError
from kubecommon.selectors import Selector, parse_selector

__all__ = ["PODS", "CachedPodLister", "pod_cache", "pod_info"]

PODS = ResourceInfo(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
_PARSED_SELECTORS = 10_000
_SELECTIONS = 20_000

Json = Mapping[str, Any]


def pod_cache(client: KubeClient, namespace: str | None = None) -> ObjectCache:
    """The watch cache a `CachedPodLister` reads (not started; the caller owns its lifecycle):
    each pod as its `PodInfo`, and a selection for every autoscaler the lister remembers one for."""
    return ObjectCache(client, PODS, namespace=namespace, convert=pod_info, kept_selections=_SELECTIONS)


def _requests(resources: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    requests = (resources or {}).get("requests") if isinstance(resources, Mapping) else None
    for name, text in (requests or {}).items():
        try:
            out[intern(str(name))] = Quantity.parse(str(text)).milli_value()
        except QuantityError:
            continue  # the API server validates quantities; a bad one counts as "no request"
    return out


def _time(value: Any) -> float | None:
    try:
        return parse_time(value)
    except ValueError:
        return None


def _phase(value: Any) -> PodPhase:
    try:
        return PodPhase(str(value))
    except ValueError:
        return PodPhase.UNKNOWN


def _ready(conditions: Any) -> tuple[ReadyStatus | None, float | None]:
    for cond in conditions or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            try:
                status = ReadyStatus(str(cond.get("status")))
            except ValueError:
                status = ReadyStatus.UNKNOWN
            return status, _time(cond.get("lastTransitionTime"))
    return None, None


def pod_info(raw: Json) -> PodInfo:
    """One pod's JSON -> PodInfo."""
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    ready, ready_at = _ready(status.get("conditions"))
    regular = tuple(ContainerInfo(name=intern(str(c.get("name") or "")), requests=_requests(c.get("resources")))
                    for c in spec.get("containers") or () if isinstance(c, Mapping))
    inits = tuple(ContainerInfo(name=intern(str(c.get("name") or "")), requests=_requests(c.get("resources")),
                                restartable_init=c.get("restartPolicy") == "Always")
                  for c in spec.get("initContainers") or () if isinstance(c, Mapping))
    pod_level = _requests(spec.get("resources")) if spec.get("resources") else {}
    overhead = _requests({"requests": spec.get("overhead")}) if spec.get("overhead") else {}
    return PodInfo(
        name=str(meta.get("name") or ""), phase=_phase(status.get("phase")), ready=ready, ready_transition=ready_at,
        start_time=_time(status.get("startTime")), deleted=meta.get("deletionTimestamp") is not None,
        containers=(*regular, *(c for c in inits if c.restartable_init)),
        pod_requests=pod_level or None, init_containers=inits, overhead=overhead or None)


class CachedPodLister:
    def __init__(self, cache: ObjectCache) -> None:
        self._cache = cache
        self._selectors: LRUCache[str, Selector] = LRUCache(_PARSED_SELECTORS)
        # (namespace, selector) -> (the cache's selection they were converted from, the pods)
        self._selections: LRUCache[tuple[str, str], tuple[Sequence[KubeObject], tuple[PodInfo, ...]]] = \
            LRUCache(_SELECTIONS)

    def pods(self, namespace: str, selector: str) -> Sequence[PodInfo]:
        """Raises SelectorError on a bad selector, CacheNotSynced before the first list."""
        parsed = self._selectors.get_or_compute(selector, lambda: parse_selector(selector))
        if not self._cache.synced:
            raise CacheNotSynced("the pod cache has not listed pods yet")
        selected = self._cache.snapshot(namespace, parsed)
        remembered = self._selections.get((namespace, selector))
        if remembered is not None and remembered[0] is selected:
            return list(remembered[1])
        pods = tuple(map(self._convert, selected))
        self._selections.put((namespace, selector), (selected, pods))
        return list(pods)

    @staticmethod
    def _convert(obj: KubeObject) -> PodInfo:
        if isinstance(obj.value, PodInfo):
            return obj.value
        return pod_info(obj.raw) if obj.raw is not None else PodInfo(name=obj.name, phase=_phase(obj.phase))


def _port_check(cache: ObjectCache) -> None:
    """mypy proves the real lister satisfies its port."""
    port: PodLister = CachedPodLister(cache)
    del port
