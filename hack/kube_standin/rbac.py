"""RBAC evaluation over the stored Roles, ClusterRoles and bindings (no aggregation rules).

Same matching rules as plugin/pkg/auth/authorizer/rbac: ClusterRoleBindings grant everywhere,
RoleBindings only in their namespace; subjects are users, groups or service accounts; `*`
wildcards for verbs, groups and resources, `*/subresource`, resourceNames, nonResourceURLs with
a trailing `*` prefix match. The reason strings follow upstream's "RBAC: allowed by ...".
Pure: reads go through the `lookup` callables passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ANONYMOUS = UserInfo(name="system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True, slots=True, kw_only=True)
class Attributes:
    user: UserInfo
    verb: str
    resource_request: bool
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    allowed: bool
    reason: str = ""


def _subject_matches(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{ns}:{name}"
    return False


def _binds(binding: Obj, user: UserInfo, namespace: str) -> bool:
    return any(_subject_matches(s, user, namespace) for s in binding.get("subjects") or [])


def _has(values: Iterable[str], wanted: str) -> bool:
    values = list(values or [])
    return "*" in values or wanted in values


def _resource_matches(rule: Obj, attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for res in rule.get("resources") or []:
        if res in ("*", combined):
            return True
        if attrs.subresource and res == f"*/{attrs.subresource}":
            return True
    return False


def _path_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    if not _has(rule.get("verbs") or [], attrs.verb):
        return False
    if not attrs.resource_request:
        return _path_matches(rule, attrs.path)
    if not _has(rule.get("apiGroups") or [], attrs.group) or not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


class Authorizer:
    def __init__(self, *, cluster_role_bindings: Callable[[], Sequence[Obj]],
                 role_bindings: Callable[[str], Sequence[Obj]],
                 cluster_role: Callable[[str], Obj | None],
                 role: Callable[[str, str], Obj | None]) -> None:
        self._crbs = cluster_role_bindings
        self._rbs = role_bindings
        self._cluster_role = cluster_role
        self._role = role

    def authorize(self, attrs: Attributes) -> Decision:
        # RoleBindings only grant namespaced resource requests; non-resource URLs are cluster-wide.
        namespace = attrs.namespace if attrs.resource_request else ""
        for binding, ns in self._bindings_of(attrs.user, namespace):
            if any(rule_allows(r, attrs) for r in self._rules(binding, ns)):
                return Decision(allowed=True, reason=_reason(binding, ns, attrs.user))
        return Decision(allowed=False, reason="")

    def rules_for(self, user: UserInfo, namespace: str) -> list[Obj]:
        """Every rule that applies to the user in the namespace (SelfSubjectRulesReview shape)."""
        return [r for binding, ns in self._bindings_of(user, namespace)
                for r in self._rules(binding, ns)]

    def _bindings_of(self, user: UserInfo, namespace: str) -> Iterator[tuple[Obj, str]]:
        """(binding, its namespace) naming the user: ClusterRoleBindings, then the namespace's
        RoleBindings (read only when no ClusterRoleBinding already answered)."""
        for binding in self._crbs():
            if _binds(binding, user, ""):
                yield binding, ""
        if namespace:
            for binding in self._rbs(namespace):
                if _binds(binding, user, namespace):
                    yield binding, namespace

    def _rules(self, binding: Obj, namespace: str) -> list[Obj]:
        ref = binding.get("roleRef") or {}
        name = ref.get("name", "")
        if ref.get("kind") == "ClusterRole":
            role = self._cluster_role(name)
        else:  # a Role, which only a RoleBinding can reference
            role = self._role(namespace, name) if namespace else None
        return list((role or {}).get("rules") or [])


def _reason(binding: Obj, namespace: str, user: UserInfo) -> str:
    ref = binding.get("roleRef") or {}
    if not namespace:
        return (f'RBAC: allowed by ClusterRoleBinding "{binding["metadata"]["name"]}" of '
                f'ClusterRole "{ref.get("name")}" to {_describe(user, binding)}')
    return (f'RBAC: allowed by RoleBinding "{binding["metadata"]["name"]}/{namespace}" of '
            f'{ref.get("kind")} "{ref.get("name")}" to {_describe(user, binding)}')


def _describe(user: UserInfo, binding: Obj) -> str:
    for s in binding.get("subjects") or []:
        if s.get("kind") == "Group" and s.get("name") in user.groups:
            return f'Group "{s["name"]}"'
        if s.get("kind") == "ServiceAccount":
            return f'ServiceAccount "{s.get("name")}/{s.get("namespace", "")}"'
    return f'User "{user.name}"'
