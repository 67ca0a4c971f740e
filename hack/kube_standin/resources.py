"""The resource types the stand-in serves: names, kinds, scope, verbs and subresources.

Built-in types are a static table mirroring what kube-apiserver registers for the groups in scope;
custom resources are derived from stored CustomResourceDefinitions. Non-goals: every built-in
group of a real cluster, general conversion between versions (each group has one version here,
except that core and events.k8s.io Events, and autoscaling/v1 and v2 HPAs, share one storage,
see `conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalePaths:
    """Where a resource keeps what its `/scale` subresource shows (CRD scale subresource shape)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status: bool = False
    scale: ScalePaths | None = None
    # Storage shared with another type (events.k8s.io Events live with core Events).
    storage: tuple[str, str] | None = None
    # Subresources served by dedicated handlers (e.g. serviceaccounts/token).
    extra_subresources: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    crd: bool = False
    # Print columns for `kubectl get` tables (CRD additionalPrinterColumns or built-in ones).
    columns: tuple[Mapping[str, Any], ...] = field(default=())
    # A CRD version's openAPIV3Schema (admission: defaulting, pruning, validation; OpenAPI).
    schema: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> tuple[str, str]:
        return self.storage or (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


def _t(group: str, version: str, plural: str, kind: str, *, namespaced: bool = True,
       singular: str | None = None, **kw: Any) -> ResourceType:
    return ResourceType(group=group, version=version, plural=plural, kind=kind,
                        singular=singular or kind.lower(), namespaced=namespaced, **kw)


_WORKLOAD_SCALE = ScalePaths(label_selector=None)  # built-ins compute the selector from spec

BUILTIN: tuple[ResourceType, ...] = (
    _t("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",), status=True,
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _t("", "v1", "pods", "Pod", short_names=("po",), categories=("all",), status=True),
    _t("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _t("", "v1", "secrets", "Secret"),
    _t("", "v1", "services", "Service", short_names=("svc",), categories=("all",), status=True,
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _t("", "v1", "endpoints", "Endpoints", singular="endpoints", short_names=("ep",)),
    _t("", "v1", "events", "Event", short_names=("ev",)),
    _t("", "v1", "nodes", "Node", namespaced=False, short_names=("no",), status=True),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",),
       extra_subresources=(("token", "TokenRequest", ("create",)),)),
    _t("apps", "v1", "deployments", "Deployment", short_names=("deploy",), categories=("all",),
       status=True, scale=_WORKLOAD_SCALE),
    _t("apps", "v1", "statefulsets", "StatefulSet", short_names=("sts",), categories=("all",),
       status=True, scale=_WORKLOAD_SCALE),
    _t("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=("all",),
       status=True, scale=_WORKLOAD_SCALE),
    _t("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
       short_names=("hpa",), categories=("all",), status=True),
    _t("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
       short_names=("hpa",), categories=("all",), status=True),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("events.k8s.io", "v1", "events", "Event", short_names=("ev",), storage=("", "events")),
    _t("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    _t("apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False,
       status=True, categories=("api-extensions",)),
    _t("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       namespaced=False, short_names=("crd", "crds"), status=True,
       categories=("api-extensions",)),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
       namespaced=False),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False,
       verbs=CREATE_ONLY),
    _t("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview",
       namespaced=False, verbs=CREATE_ONLY),
    _t("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
       namespaced=False, verbs=CREATE_ONLY),
    _t("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
       namespaced=False, verbs=CREATE_ONLY),
    _t("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview",
       verbs=CREATE_ONLY),
    _t("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
       namespaced=False, verbs=CREATE_ONLY),
)

# Group priorities as kube-apiserver assigns them to its local APIServices (order of /apis).
GROUP_PRIORITY = {
    "": 18000, "apiregistration.k8s.io": 18000, "apps": 17800, "events.k8s.io": 17750,
    "authentication.k8s.io": 17700, "authorization.k8s.io": 17600, "autoscaling": 17500,
    "rbac.authorization.k8s.io": 17000, "apiextensions.k8s.io": 16700,
    "coordination.k8s.io": 16500, "discovery.k8s.io": 16200,
}


def crd_resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The served versions of a stored CustomResourceDefinition as resource types."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        sub = version.get("subresources") or {}
        scale = None
        if "scale" in sub:
            s = sub["scale"] or {}
            scale = ScalePaths(spec_replicas=s.get("specReplicasPath", ".spec.replicas"),
                               status_replicas=s.get("statusReplicasPath", ".status.replicas"),
                               label_selector=s.get("labelSelectorPath"))
        out.append(ResourceType(
            group=spec.get("group", ""), version=version["name"], plural=names.get("plural", ""),
            singular=names.get("singular") or names.get("kind", "").lower(),
            kind=names.get("kind", ""), namespaced=spec.get("scope") != "Cluster",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            status="status" in sub, scale=scale, crd=True,
            storage=(spec.get("group", ""), names.get("plural", "")),
            columns=tuple(version.get("additionalPrinterColumns") or ()),
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
        ))
    return out
