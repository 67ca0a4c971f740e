"""`metav1.Status` errors: the one way either binary reports a failed API request.

Every 4xx/5xx the adapter returns, and every Status body the controller reads back from the API
server or a metrics API, goes through these types, so the reason/code pairs and message shapes stay
those of k8s.io/apimachinery `errors` (client-go prints them as `Error from server (<Reason>): ...`).

Pure: no I/O. Rendering to HTTP belongs to the server's middleware.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "ServiceUnavailable",
    "StatusError",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "qualified_resource",
    "status_error_from_dict",
    "success_status",
]


def qualified_resource(resource: str, group: str = "") -> str:
    """`pods` for the core group, `deployments.apps` otherwise, as upstream messages print it."""
    return f"{resource}.{group}" if group else resource


class StatusError(Exception):
    """An API error that becomes a `metav1.Status` body with `code` as the HTTP status."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = ""

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.headers: dict[str, str] = dict(headers or {})

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


def _object_details(resource: str, group: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


class BadRequest(StatusError):
    code, reason = 400, "BadRequest"


class Unauthorized(StatusError):
    code, reason = 401, "Unauthorized"

    def __init__(self, message: str = "Unauthorized", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)


class Forbidden(StatusError):
    code, reason = 403, "Forbidden"

    @classmethod
    def for_request(cls, *, user: str, verb: str, resource: str = "", group: str = "",
                    name: str = "", namespace: str = "", subresource: str = "",
                    path: str = "", reason: str = "") -> Forbidden:
        """kube-apiserver's wording for a denied request: a non-resource request gives its `path`,
        a resource request its attributes (and no path). The authorizer's `reason`, if any, is
        appended after a colon, as k8s.io/apiserver's `ForbiddenStatusError` does."""
        suffix = f": {reason}" if reason else ""
        if path and not resource:
            return cls(f'forbidden: User "{user}" cannot {verb} path "{path}"{suffix}')
        # The subject names the resource alone; the subresource appears only after "cannot <verb>".
        target = qualified_resource(resource, group)
        subject = f'{target} "{name}"' if name else target
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        message = (f'{subject} is forbidden: User "{user}" cannot {verb} resource '
                   f'"{resource}{"/" + subresource if subresource else ""}" in API group "{group}"{where}{suffix}')
        return cls(message, details=_object_details(resource, group, name))


class NotFound(StatusError):
    code, reason = 404, "NotFound"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str) -> NotFound:
        return cls(f'{qualified_resource(resource, group)} "{name}" not found',
                   details=_object_details(resource, group, name))

    @classmethod
    def for_path(cls) -> NotFound:
        return cls("the server could not find the requested resource")


class AlreadyExists(StatusError):
    code, reason = 409, "AlreadyExists"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str) -> AlreadyExists:
        return cls(f'{qualified_resource(resource, group)} "{name}" already exists',
                   details=_object_details(resource, group, name))


class Conflict(StatusError):
    code, reason = 409, "Conflict"

    @classmethod
    def for_object(cls, resource: str, group: str, name: str, cause: str) -> Conflict:
        return cls(f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {cause}',
                   details=_object_details(resource, group, name))


class Gone(StatusError):
    """410 with reason `Expired`: a watch or list from a compacted resourceVersion."""

    code, reason = 410, "Expired"


class Invalid(StatusError):
    code, reason = 422, "Invalid"

    @classmethod
    def for_object(cls, kind: str, group: str, name: str,
                   causes: list[tuple[str, str]]) -> Invalid:
        """causes: (field, message) pairs, as `field.ErrorList` renders them."""
        text = ", ".join(f"{field}: {message}" for field, message in causes)
        details = {"name": name, "kind": kind,
                   "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]}
        if group:
            details["group"] = group
        return cls(f'{kind} "{name}" is invalid: {text}', details=details)


class MethodNotAllowed(StatusError):
    code, reason = 405, "MethodNotAllowed"

    @classmethod
    def for_verb(cls, verb: str, resource: str, group: str = "") -> MethodNotAllowed:
        return cls(f'{verb} is not supported on resources of kind "{qualified_resource(resource, group)}"')


class NotAcceptable(StatusError):
    code, reason = 406, "NotAcceptable"

    @classmethod
    def for_types(cls, accepted: tuple[str, ...] = ("application/json",)) -> NotAcceptable:
        return cls(f"only the following media types are accepted: {', '.join(accepted)}")


class UnsupportedMediaType(StatusError):
    code, reason = 415, "UnsupportedMediaType"


class TooManyRequests(StatusError):
    code, reason = 429, "TooManyRequests"


class InternalError(StatusError):
    code, reason = 500, "InternalError"

    @classmethod
    def wrapping(cls, error: str) -> InternalError:
        return cls(f"Internal error occurred: {error}", details={"causes": [{"message": error}]})


class ServiceUnavailable(StatusError):
    code, reason = 503, "ServiceUnavailable"


class Timeout(StatusError):
    code, reason = 504, "Timeout"

    def __init__(self, message: str, **kwargs: Any) -> None:
        super().__init__(message if message.startswith("Timeout: ") else f"Timeout: {message}", **kwargs)


_KNOWN: tuple[type[StatusError], ...] = (
    BadRequest, Unauthorized, Forbidden, NotFound, AlreadyExists, Conflict, Gone, Invalid, MethodNotAllowed,
    NotAcceptable, UnsupportedMediaType, TooManyRequests, InternalError, ServiceUnavailable, Timeout,
)
_BY_REASON: dict[str, type[StatusError]] = {cls.reason: cls for cls in _KNOWN}
# From the classes' own codes; a bare 409 is a Conflict (AlreadyExists is known by its reason).
_BY_CODE: dict[int, type[StatusError]] = {cls.code: cls for cls in _KNOWN if cls is not AlreadyExists}


def status_error_from_dict(body: Mapping[str, Any] | None, http_code: int) -> StatusError:
    """Rebuild the typed error from a Status body a server sent (or from the code alone)."""
    body = body if isinstance(body, Mapping) else {}
    is_status = body.get("kind") == "Status"
    reason = str(body.get("reason") or "") if is_status else ""
    code = int(body.get("code") or http_code) if is_status else http_code
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or StatusError
    message = str(body.get("message") or "") if is_status else ""
    error = cls.__new__(cls)
    StatusError.__init__(error, message or f"the server responded with HTTP {code}",
                         details=body.get("details") if is_status else None)
    if cls is StatusError:
        error.code = code  # type: ignore[misc]  # an unknown code keeps its own number
    return error


def success_status(message: str = "", *, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `Status` kube-apiserver returns for a successful delete of a collection or object."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if message:
        body["message"] = message
    if details:
        body["details"] = dict(details)
    return body
