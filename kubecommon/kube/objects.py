"""Plain values for Kubernetes objects held in watch caches, and the read-side Protocols.

Raw API JSON is converted at the edge (`from_api`) into `KubeObject`, which keeps only what the
metrics paths need (identity, labels, creation time, pod phase/node), so a cache of 100k pods
stays small and handlers never see Kubernetes client types. A reader that needs more keeps
either the raw JSON (`keep_raw`, best with a `strip` that drops what it never reads, as
client-go's `SetTransform` drops managedFields) or, smaller still, only its own parsed value
of the object (`value`, see `ObjectCache(convert=...)`). Identity strings shared between objects
(namespace, label keys and values) are interned, so 10,000 pods of one namespace hold one copy.

Non-goals: writes, full object bodies. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from sys import intern
from types import MappingProxyType
from typing import Any, Protocol

from kubecommon.selectors import Selector

__all__ = ["GroupResourceLike", "KubeObject", "ObjectCaches", "ObjectReader", "from_api"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


class GroupResourceLike(Protocol):
    """Anything with `.group` and `.resource` (adapter.rules.GroupResource satisfies it)."""

    @property
    def group(self) -> str: ...

    @property
    def resource(self) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeObject:
    """The part of a Kubernetes object the adapter uses."""

    name: str
    namespace: str = ""  # "" for cluster-scoped objects
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: str | None = None  # RFC 3339 text exactly as the API server sent it
    kind: str = ""
    api_version: str = ""
    phase: str = ""  # pods only: status.phase
    node_name: str = ""  # pods only: spec.nodeName
    data: Mapping[str, str] = field(default_factory=lambda: _EMPTY)  # configmaps only
    # The object as the API server sent it (after the cache's `strip`), for readers that need more
    # than the fields above (the controller's autoscaler objects); None unless the cache keeps it.
    raw: Mapping[str, Any] | None = None
    # What the cache's `convert` made of the object (the controller's PodInfo, a workload's Scale):
    # kept instead of the raw JSON when that parsed value is all its reader needs; None without one.
    value: Any = None

    def fields(self) -> dict[str, str]:
        """Values addressable by field selectors (metadata.name, metadata.namespace, ...)."""
        return {
            "metadata.name": self.name,
            "metadata.namespace": self.namespace,
            "status.phase": self.phase,
            "spec.nodeName": self.node_name,
        }


def from_api(obj: Mapping[str, Any], *, kind: str = "", api_version: str = "",
             keep_data: bool = False, keep_raw: bool = False, stripped: Mapping[str, Any] | None = None,
             value: Any = None, keep_labels: bool = True) -> KubeObject:
    """Convert one object of a LIST or WATCH answer (list items carry no kind/apiVersion).

    `keep_raw` keeps `stripped` (the part of `obj` the reader needs) when given, else `obj`;
    `keep_labels=False` leaves `labels` empty (a reader that never selects by label).
    ValueError names the field when the object, its metadata, labels or data are not JSON
    objects: a malformed answer is an error the caller reports, never an AttributeError that
    ends a watch loop."""
    meta = _object(_object(obj, "the object").get("metadata"), "metadata")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = _object(meta.get("labels"), "metadata.labels") if keep_labels else _EMPTY
    data = _object(obj.get("data"), "data") if keep_data else None
    return KubeObject(
        name=str(meta.get("name", "")),
        namespace=intern(str(meta.get("namespace") or "")),
        labels=MappingProxyType({intern(str(k)): intern(str(v)) for k, v in labels.items()}) if labels else _EMPTY,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        creation_timestamp=meta.get("creationTimestamp"),
        kind=str(obj.get("kind") or kind),
        api_version=str(obj.get("apiVersion") or api_version),
        phase=str(status.get("phase") or "") if isinstance(status, Mapping) else "",
        node_name=str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else "",
        data=MappingProxyType({str(k): str(v) for k, v in data.items()}) if data else _EMPTY,
        raw=(obj if stripped is None else stripped) if keep_raw else None,
        value=value,
    )


def _object(value: Any, what: str) -> Mapping[str, Any]:
    """`value` when it is a JSON object, {} when absent or null; else ValueError naming `what`."""
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise ValueError(f"malformed object from the API server: {what} is a {type(value).__name__}, "
                         "not an object")
    return value


class ObjectReader(Protocol):
    """Read access to one synced watch cache. Calls never do I/O."""

    @property
    def kind(self) -> str:
        """The Kind of the cached objects (e.g. `Pod`, `Deployment`)."""
        ...

    @property
    def api_version(self) -> str:
        """`v1`, `apps/v1`, ... of the cached objects."""
        ...

    @property
    def namespaced(self) -> bool: ...

    def get(self, namespace: str | None, name: str) -> KubeObject | None:
        """The object, or None. `namespace` is ignored for cluster-scoped resources."""
        ...

    def list(self, namespace: str | None, selector: Selector | None = None) -> Sequence[KubeObject]:
        """Objects in `namespace` (None = all) matching `selector`, sorted by (namespace, name)."""
        ...


class ObjectCaches(Protocol):
    """Watch caches per group/resource, started on first use and then kept."""

    async def reader(self, resource: GroupResourceLike) -> ObjectReader:
        """A synced cache for `resource`.

        Raises `errors.UnknownResource` when the API server does not serve it and
        `errors.CacheNotSynced` / `errors.KubeUnavailable` when it cannot be synced in time.
        """
        ...
