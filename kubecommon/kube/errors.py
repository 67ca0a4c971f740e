"""Errors of the Kubernetes access layer; the server middleware maps each to a Status code.

Non-goals: HTTP rendering. These are not `StatusError`s on purpose: whether "the API server is
unreachable" is a 503 or a startup failure is decided by the caller, once.
"""

from __future__ import annotations

from kubecommon.status import StatusError, qualified_resource

__all__ = ["CacheNotSynced", "KubeAPIError", "KubeError", "KubeUnavailable", "UnknownKind", "UnknownResource"]


class KubeError(Exception):
    """Base of every failure talking to the Kubernetes API."""


class KubeUnavailable(KubeError):
    """The API server could not be reached or timed out (retrying later can succeed)."""


class CacheNotSynced(KubeUnavailable):
    """A watch cache did not finish its first list within the readiness timeout."""


class UnknownResource(KubeError):
    """The API server does not serve the requested group/resource (discovery has no such entry)."""

    def __init__(self, group: str, resource: str) -> None:
        super().__init__(f"the server doesn't have a resource type {qualified_resource(resource, group)!r}")
        self.group = group
        self.resource = resource


class UnknownKind(UnknownResource):
    """No resource of the group serves the kind (client-go's NoKindMatchError wording)."""

    def __init__(self, group: str, kind: str, detail: str = "") -> None:
        KubeError.__init__(self, detail or f'no matches for kind "{kind}" in group "{group}"')
        self.group = group
        self.resource = kind
        self.kind = kind


class KubeAPIError(KubeError):
    """The API server answered with a non-2xx Status (forbidden, not found, gone, ...)."""

    def __init__(self, status: StatusError, *, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: {status.code} {status.reason}: {status.message}")
        self.status = status
        self.method = method
        self.path = path

    @property
    def code(self) -> int:
        return self.status.code
