"""Lookup of served resource types by URL coordinates, kind or short name.

Holds the built-in table plus the types derived from established CustomResourceDefinitions,
rebuilt whenever a CRD is written. Non-goals: a full RESTMapper (no version preference
across groups beyond what discovery needs).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Mapping, TypeVar

from .resources import BUILTIN, ResourceType, crd_resource_types

T = TypeVar("T")


class TypeRegistry:
    def __init__(self) -> None:
        self._builtin = {(t.group, t.version, t.plural): t for t in BUILTIN}
        self._crd: dict[tuple[str, str, str], ResourceType] = {}
        self._derived: dict[Hashable, Any] = {}

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value computed from the served types (OpenAPI documents), kept until a CRD change."""
        if key not in self._derived:
            self._derived[key] = compute()
        value: T = self._derived[key]
        return value

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        key = (group, version, plural)
        return self._builtin.get(key) or self._crd.get(key)

    def all(self) -> list[ResourceType]:
        return list(self._builtin.values()) + list(self._crd.values())

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.all() if t.group == group and t.version == version]

    def types_for_storage(self, storage: tuple[str, str]) -> list[ResourceType]:
        return [t for t in self.all() if t.storage_key == storage]

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for t in self.all():
            if t.group == group and t.version == version and t.kind == kind:
                return t
        return None

    def set_crds(self, crds: Iterable[Mapping[str, Any]]) -> None:
        table: dict[tuple[str, str, str], ResourceType] = {}
        for crd in crds:
            if not _established(crd):
                continue
            for t in crd_resource_types(crd):
                table[(t.group, t.version, t.plural)] = t
        self._crd = table
        self._derived = {}


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
