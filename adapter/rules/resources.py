"""Kubernetes group-resources and their mapping to and from Prometheus label names.

Job: `GroupResource` values; normalising what users write (`pod`, `Pod`, `deployment`,
`deployments.apps`, `ingress`) to the plural lower-case form through a static `ResourceTable`
(we have no RESTMapper at load time; a table built from API discovery can be passed instead); and
`LabelMapper`, prometheus-adapter's resource converter: overrides win, then the `resources.template`
(`<<.Group>>` sanitised, `<<.Resource>>` singular). Non-goals: I/O, caching (everything is computed
once at compile time or is a dict lookup).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from adapter.rules import goregex, gotemplate
from kubecommon.status import qualified_resource

__all__ = [
    "DEFAULT_TABLE",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUMES",
    "PODS",
    "GroupResource",
    "KnownResource",
    "LabelMapper",
    "NoLabelForResource",
    "ResourceTable",
    "is_root_scoped_for_discovery",
    "is_valid_label_name",
    "sanitize_group",
]


@dataclass(frozen=True, slots=True, order=True)
class GroupResource:
    """A plural lower-case resource in an API group (`""` for core)."""

    group: str
    resource: str

    def __str__(self) -> str:
        return qualified_resource(self.resource, self.group)

    @classmethod
    def parse(cls, text: str) -> GroupResource:
        """`deployments.apps` -> (apps, deployments); `pods` -> ("", pods). No normalisation."""
        resource, _, group = text.partition(".")
        return cls(group=group, resource=resource)


NAMESPACES = GroupResource(group="", resource="namespaces")
NODES = GroupResource(group="", resource="nodes")
PERSISTENT_VOLUMES = GroupResource(group="", resource="persistentvolumes")
PODS = GroupResource(group="", resource="pods")


def is_root_scoped_for_discovery(resource: GroupResource) -> bool:
    """prometheus-adapter's discovery scope rule: only namespaces, nodes and persistentvolumes
    are registered as root-scoped; every other resource is registered as namespaced, whatever its
    real scope (series_registry.go SetSeries + ResourcesForSeries)."""
    return resource in (NAMESPACES, NODES, PERSISTENT_VOLUMES)


_GROUP_SANITIZER = str.maketrans({".": "_", "-": "_"})


def sanitize_group(group: str) -> str:
    """`.Group` as templates see it: dots and dashes become underscores."""
    return group.translate(_GROUP_SANITIZER)


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownResource:
    group: str
    resource: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(group=self.group, resource=self.resource)


def _k(group: str, kind: str, plural: str, namespaced: bool = True, *short: str) -> KnownResource:
    return KnownResource(
        group=group, resource=plural, singular=kind.lower(), kind=kind,
        namespaced=namespaced, short_names=short,
    )  # fmt: skip


_BUILTIN: tuple[KnownResource, ...] = (
    _k("", "Pod", "pods", True, "po"),
    _k("", "Namespace", "namespaces", False, "ns"),
    _k("", "Node", "nodes", False, "no"),
    _k("", "Service", "services", True, "svc"),
    _k("", "Endpoints", "endpoints", True, "ep"),
    _k("", "PersistentVolume", "persistentvolumes", False, "pv"),
    _k("", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    _k("", "ConfigMap", "configmaps", True, "cm"),
    _k("", "Secret", "secrets"),
    _k("", "ServiceAccount", "serviceaccounts", True, "sa"),
    _k("", "ReplicationController", "replicationcontrollers", True, "rc"),
    _k("apps", "Deployment", "deployments", True, "deploy"),
    _k("apps", "StatefulSet", "statefulsets", True, "sts"),
    _k("apps", "ReplicaSet", "replicasets", True, "rs"),
    _k("apps", "DaemonSet", "daemonsets", True, "ds"),
    _k("batch", "Job", "jobs"),
    _k("batch", "CronJob", "cronjobs", True, "cj"),
    _k("networking.k8s.io", "Ingress", "ingresses", True, "ing"),
    _k("networking.k8s.io", "NetworkPolicy", "networkpolicies", True, "netpol"),
    _k("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, "hpa"),
    _k("policy", "PodDisruptionBudget", "poddisruptionbudgets", True, "pdb"),
)


@dataclass(frozen=True, slots=True)
class ResourceTable:
    """Resources we can normalise to; stands in for the RESTMapper."""

    known: tuple[KnownResource, ...]
    _index: Mapping[str, tuple[KnownResource, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[KnownResource]] = {}
        for item in self.known:
            for alias in {item.resource, item.singular, item.kind.lower(), *item.short_names}:
                index.setdefault(alias, []).append(item)
        object.__setattr__(self, "_index", MappingProxyType({k: tuple(v) for k, v in index.items()}))

    @classmethod
    def from_kinds(cls, kinds: Iterable[Mapping[str, object]]) -> ResourceTable:
        """From `{group, kind, resource, namespaced}` rows (API discovery or a test fixture)."""
        return cls(tuple(
            KnownResource(group=str(k["group"]), resource=str(k["resource"]),
                          singular=str(k["kind"]).lower(), kind=str(k["kind"]),
                          namespaced=bool(k.get("namespaced", True)))
            for k in kinds
        ))  # fmt: skip

    def lookup(self, group: str, resource: str) -> KnownResource | None:
        """The known resource `resource` (any of plural/singular/kind/short name, any case)
        names in `group`; with an empty group, the first group that has it (core first)."""
        candidates = self._index.get(resource.lower(), ())
        for item in candidates:
            if not group or item.group == group.lower():
                return item
        return None

    def normalize(self, group: str, resource: str) -> GroupResource | None:
        """Plural lower-case form, or None when the table does not know it."""
        item = self.lookup(group, resource)
        return item.group_resource if item else None

    def normalize_or_pass(self, group: str, resource: str) -> GroupResource:
        """Like `normalize`, but resources the table does not know (CRDs, other API versions)
        pass through in plural lower-case form: the plural of a known name in another group
        (`extensions` + `ingress` -> `ingresses.extensions`), else the name if it already ends
        in `s`, else Kubernetes' guessed plural (`brand` -> `brands`, `policy` -> `policies`)."""
        found = self.normalize(group, resource)
        if found is not None:
            return found
        name = resource.lower()
        elsewhere = self.lookup("", name)
        if elsewhere is not None:
            return GroupResource(group=group.lower(), resource=elsewhere.resource)
        return GroupResource(group=group.lower(), resource=_guess_plural(name))

    def singular(self, resource: GroupResource) -> str | None:
        item = self.lookup(resource.group, resource.resource)
        return item.singular if item else None


def _guess_plural(name: str) -> str:
    """apimachinery's UnsafeGuessKindToResource, for a name that is not already plural."""
    if not name or name.endswith("s"):
        return name
    if name.endswith("y") and name[-2:-1] not in ("a", "e", "i", "o", "u"):
        return name[:-1] + "ies"
    return name + ("es" if name.endswith(("x", "z", "ch", "sh")) else "s")


DEFAULT_TABLE = ResourceTable(_BUILTIN)


class NoLabelForResource(LookupError):
    """The rule has no override and no template that maps this resource to a label."""

    def __init__(self, resource: GroupResource, reason: str) -> None:
        self.resource = resource
        self.reason = reason
        super().__init__(f"unable to convert resource {resource} into label: {reason}")


_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelMapper:
    """One rule's label <-> resource mapping (prometheus-adapter `resourceConverter`)."""

    overrides: Mapping[str, GroupResource] = field(default_factory=lambda: MappingProxyType({}))
    template: gotemplate.Template | None = None
    extractor: goregex.GoPattern | None = None
    table: ResourceTable = DEFAULT_TABLE

    @property
    def has_template(self) -> bool:
        return self.template is not None

    def label_for(self, resource: GroupResource) -> str:
        """The label naming objects of `resource`; raises NoLabelForResource."""
        for label, target in self.overrides.items():
            if target == resource:
                return label
        if self.template is None:
            raise NoLabelForResource(resource, "no generic resource label form specified for this metric")
        singular = self.table.singular(resource)
        if singular is None:
            raise NoLabelForResource(resource, f"unable to singularize resource {resource}")
        label = self.template.render({"Group": sanitize_group(resource.group), "Resource": singular})
        if not label:
            raise NoLabelForResource(resource, "empty label produced by label template")
        return label

    def label_or_none(self, resource: GroupResource) -> str | None:
        try:
            return self.label_for(resource)
        except NoLabelForResource:
            return None

    def resource_for_label(self, label: str) -> GroupResource | None:
        """The resource a series label names: the override, else the template pattern resolved
        through the table (unknown resources are skipped, like a RESTMapper miss upstream)."""
        if label in self.overrides:
            return self.overrides[label]
        if self.extractor is None:
            return None
        match = self.extractor.match(label)
        if match is None:
            return None
        group = match.groupdict().get("group") or ""
        return self.table.normalize(group, match.group("resource") or "")

    def resources_for(self, labels: Iterable[str]) -> tuple[GroupResource, ...]:
        """Distinct resources named by these label names, in label order."""
        found: dict[GroupResource, None] = {}
        for label in labels:
            resource = self.resource_for_label(label)
            if resource is not None:
                found.setdefault(resource, None)
        return tuple(found)


def is_valid_label_name(label: str) -> bool:
    """A Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`), checked whole."""
    return bool(_LABEL_NAME.fullmatch(label))  # not match: `$` accepts a trailing newline
