"""Who is making a request: the `user.Info` of k8s.io/apiserver, as a frozen value.

Non-goals: authentication itself (each binary's filters) or review calls (reviews). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["ANONYMOUS", "ANONYMOUS_USER", "AUTHENTICATED_GROUP", "MASTERS_GROUP", "UNAUTHENTICATED_GROUP", "UserInfo",
           "bearer_token"]

AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
MASTERS_GROUP = "system:masters"
ANONYMOUS_USER = "system:anonymous"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def with_authenticated_group(self) -> UserInfo:
        """k8s.io/apiserver's group adder: every non-anonymous identity is `system:authenticated`."""
        if self.name == ANONYMOUS_USER or AUTHENTICATED_GROUP in self.groups \
                or UNAUTHENTICATED_GROUP in self.groups:
            return self
        return UserInfo(name=self.name, uid=self.uid, groups=(*self.groups, AUTHENTICATED_GROUP),
                        extra=self.extra)

    def review_fields(self) -> dict[str, Any]:
        """The user part of a SubjectAccessReview spec (empty fields omitted, as Go does)."""
        spec: dict[str, Any] = {"user": self.name}
        if self.uid:
            spec["uid"] = self.uid
        if self.groups:
            spec["groups"] = list(self.groups)
        if self.extra:
            spec["extra"] = {k: list(v) for k, v in sorted(self.extra.items())}
        return spec

    @classmethod
    def from_review(cls, user: Mapping[str, Any]) -> UserInfo:
        """From TokenReview `status.user` ({username, uid, groups, extra})."""
        extra = user.get("extra") or {}
        return cls(
            name=str(user.get("username") or ""),
            uid=str(user.get("uid") or ""),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=MappingProxyType({str(k): tuple(str(x) for x in (v or ())) for k, v in extra.items()}),
        )


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, as k8s.io/apiserver's bearertoken
    authenticator reads it: trimmed, split on single spaces (at most 3 parts); `Bearer` alone or
    an empty second part (`Bearer  x`) is no credential at all (None), not a rejected one."""
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


ANONYMOUS = UserInfo(name=ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))
