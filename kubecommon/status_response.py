"""A `metav1.Status` error as the HTTP answer kube-apiserver writes for it, for both binaries' servers.

Compact JSON of `StatusError.to_dict()`, the error's own headers (`Retry-After`, ...) and
`X-Content-Type-Options: nosniff`, as k8s.io/apiserver's responsewriters do. One home, so the
adapter's error middleware and the controller's endpoint guard answer byte for byte alike.

Non-goals: which error a request gets (each server's filters), the error values (kubecommon.status).
"""

from __future__ import annotations

import json

from aiohttp import web

from kubecommon.status import StatusError

__all__ = ["status_response"]


def status_response(error: StatusError) -> web.Response:
    body = json.dumps(error.to_dict(), separators=(",", ":")).encode()
    headers = {"X-Content-Type-Options": "nosniff", **error.headers}
    return web.Response(status=error.code, body=body, content_type="application/json", headers=headers)
