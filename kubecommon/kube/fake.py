"""Map-backed in-memory `ObjectCaches` for unit tests of layers above the Kubernetes client.

Non-goals: watch semantics, resourceVersions. Behaves like a synced cache: reads are immediate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubecommon.kube.errors import UnknownResource
from kubecommon.kube.objects import GroupResourceLike, KubeObject, ObjectCaches, ObjectReader
from kubecommon.selectors import Selector

__all__ = ["FakeObjectCaches", "FakeObjectReader"]

# Kind/apiVersion/scope of the resources the fakes serve; any other resource is unknown, as it
# would be to an API server that does not serve it.
_KNOWN: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("", "pods"): ("Pod", "v1", True),
    ("", "nodes"): ("Node", "v1", False),
    ("", "namespaces"): ("Namespace", "v1", False),
    ("", "services"): ("Service", "v1", True),
    ("apps", "deployments"): ("Deployment", "apps/v1", True),
    ("apps", "statefulsets"): ("StatefulSet", "apps/v1", True),
    ("apps", "replicasets"): ("ReplicaSet", "apps/v1", True),
}


@dataclass(frozen=False, slots=True, kw_only=True)  # frozen=False: tests add objects later
class FakeObjectReader:
    kind: str
    api_version: str
    namespaced: bool
    objects: dict[tuple[str, str], KubeObject] = field(default_factory=dict)

    def add(self, *objects: KubeObject) -> None:
        for obj in objects:
            self.objects[(obj.namespace if self.namespaced else "", obj.name)] = obj

    def get(self, namespace: str | None, name: str) -> KubeObject | None:
        return self.objects.get(((namespace or "") if self.namespaced else "", name))

    def list(self, namespace: str | None, selector: Selector | None = None) -> Sequence[KubeObject]:
        return [
            obj for (ns, _), obj in sorted(self.objects.items())
            if (namespace is None or not self.namespaced or ns == namespace)
            and (selector is None or selector.matches(obj.labels))
        ]


class FakeObjectCaches:
    """`ObjectCaches` over fixed objects keyed by (group, resource)."""

    def __init__(self, objects: Mapping[tuple[str, str], Iterable[KubeObject]] | None = None) -> None:
        self._readers: dict[tuple[str, str], FakeObjectReader] = {}
        self.requested: list[tuple[str, str]] = []  # which caches were asked for, in order
        for key, objs in (objects or {}).items():
            self.add(key, *objs)

    def add(self, key: tuple[str, str], *objects: KubeObject) -> FakeObjectReader:
        reader = self._readers.get(key)
        if reader is None:
            if key not in _KNOWN:
                raise KeyError(f"{key} is not one of the fake's known resources (_KNOWN)")
            kind, api_version, namespaced = _KNOWN[key]
            reader = FakeObjectReader(kind=kind, api_version=api_version, namespaced=namespaced)
            self._readers[key] = reader
        reader.add(*objects)
        return reader

    async def reader(self, resource: GroupResourceLike) -> ObjectReader:
        key = (resource.group, resource.resource)
        self.requested.append(key)
        reader = self._readers.get(key)
        if reader is None:
            if key not in _KNOWN:
                raise UnknownResource(resource.group, resource.resource)
            reader = self.add(key)
        return reader


def _conforms(caches: FakeObjectCaches, reader: FakeObjectReader) -> tuple[ObjectCaches, ObjectReader]:
    """Never called: lets mypy check that the fakes satisfy the Protocols."""
    return caches, reader
