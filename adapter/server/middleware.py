"""The request pipeline: errors → Status, request metrics, authentication, authorization, negotiation.

THE one place where exceptions become HTTP answers. `StatusError`s are rendered as they are;
typed errors of lower layers are mapped by the one error table (`adapter.services.errors.
status_for`, which services use too); anything else is our bug: logged with its traceback and
answered 500 InternalError without details. Backend details
(Prometheus URLs, PromQL, Kubernetes messages) go to the log only.

Order, like k8s.io/apiserver's filter chain: metrics and error translation around everything,
authentication, max-in-flight, authorization, content negotiation, then the route's handler.
Unrouted paths therefore still need credentials before they get their 404. One middleware runs
the chain: aiohttp's per-middleware dispatch was measurable on the custom-metrics hot path.

Non-goals: rendering successful bodies (handlers and render modules do).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
import traceback
from collections.abc import Awaitable, Callable

from aiohttp import web

from kubecommon.kube.identity import ANONYMOUS
from adapter.server import discovery_docs, negotiation
from adapter.server.context import CONTEXT, INFLIGHT, REQUEST_INFO, REQUEST_INFOS, USER, ServerContext
from kubecommon.requestinfo import RequestInfo
from adapter.services import errors
from kubecommon.status import (
    BadRequest,
    InternalError,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    StatusError,
    TooManyRequests,
    Unauthorized,
)
from kubecommon.status_response import status_response

__all__ = ["MIDDLEWARES", "status_for"]

_log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_NEGOTIATED_PREFIXES = ("/apis", "/openapi", "/version")


def status_for(err: BaseException) -> StatusError:
    """Map any exception to the Status the client gets: aiohttp's own HTTP exceptions here, every
    other error through the one table, `adapter.services.errors.status_for`."""
    if isinstance(err, web.HTTPException):
        return _from_http_exception(err)
    return errors.status_for(err)


def _from_http_exception(exc: web.HTTPException) -> StatusError:
    if exc.status == 404:
        return NotFound.for_path()
    if exc.status == 405:
        return MethodNotAllowed("the server does not allow this method on the requested resource")
    if 400 <= exc.status < 500:  # e.g. 413/414/431 from aiohttp's own limits
        return BadRequest(exc.reason or "bad request")
    return InternalError.wrapping(exc.reason or "internal error")


@web.middleware
async def request_pipeline(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The whole filter chain in one middleware: every request pays aiohttp's dispatch once."""
    ctx = request.app[CONTEXT]
    # perf_counter, not loop.time(): uvloop's loop clock counts whole milliseconds
    started = time.perf_counter()
    try:
        info = request.app[REQUEST_INFOS].derive(request)
    except StatusError as err:  # e.g. `/apis/<g>/<v>/watch` alone: kube-apiserver's 500
        return status_response(err)
    request[REQUEST_INFO] = info
    try:
        response = await _filtered(request, handler, ctx, info)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # noqa: BLE001 - this is the one translation point
        response = status_response(status_for(err))
        _release_frames(err)
    ctx.telemetry.observe_request(group=_bounded(info.api_group, _GROUPS),
                                  version=_bounded(info.api_version, _VERSIONS),
                                  verb=_bounded(info.verb, _VERBS), code=response.status,
                                  seconds=time.perf_counter() - started)
    return response


async def _filtered(request: web.Request, handler: Handler, ctx: ServerContext,
                    info: RequestInfo) -> web.StreamResponse:
    """kube-apiserver's order: authentication, then max-in-flight, then authorization.

    Authenticating first means a flood of unauthenticated requests is refused with 401 without
    taking in-flight slots from legitimate clients; authorization, which may call the Kubernetes
    API, only runs within the limit.
    """
    if len(request.raw_path) > ctx.max_url_length:
        raise BadRequest(f"request URI longer than {ctx.max_url_length} bytes")
    authenticator, authorizer = ctx.authenticator, ctx.authorizer
    user = ANONYMOUS
    if authenticator is None or authorizer is None:  # both None only with --insecure-disable-auth
        authorizer = None
    else:
        user = await authenticator.authenticate(peer_cert_der=_peer_certificate(request),
                                                headers=request.headers)
        if user is ANONYMOUS and not ctx.anonymous and not authorizer.skips_review(user, info):
            raise Unauthorized()
        request[USER] = user
    limited = request.path not in _UNLIMITED_PATHS  # health probes are never refused
    inflight = request.app[INFLIGHT]
    if limited:
        if inflight.current >= ctx.max_inflight:
            raise TooManyRequests("Too many requests, please try again later.", headers={"Retry-After": "1"},
                                  details={"retryAfterSeconds": 1})
        inflight.current += 1
    try:
        if authorizer is not None:
            await authorizer.authorize(user, info)
        if request.path.startswith(_NEGOTIATED_PREFIXES) and \
                not negotiation.accepts_json(request.headers.get("Accept")):
            raise NotAcceptable.for_types()
        return await handler(request)
    finally:
        if limited:
            inflight.current -= 1


def _release_frames(err: BaseException) -> None:
    """Drop the locals of every finished frame the error (and what it chains) still references.

    Once an error is a response nobody reads its traceback again, but its frames hold what the
    request had in hand (a Prometheus answer, a response object), often in reference cycles that
    only a full collection frees. Clearing them lets reference counting free it all now.
    """
    seen: set[int] = set()
    pending: list[BaseException | None] = [err]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending += (current.__cause__, current.__context__)


# Metric label values come from the URL: only known values are kept, so that requests for made-up
# groups, versions or methods cannot create unbounded series in /metrics.
_GROUPS = frozenset({"", *discovery_docs.VERSIONS})
_VERSIONS = frozenset({"", *(v for versions in discovery_docs.VERSIONS.values() for v in versions)})
_VERBS = frozenset({"get", "list", "watch", "head", "post", "put", "patch", "delete", "create", "update",
                    "deletecollection", "options"})


def _bounded(value: str, known: frozenset[str]) -> str:
    return value if value in known else "other"


def _peer_certificate(request: web.Request) -> bytes | None:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if not isinstance(ssl_object, (ssl.SSLObject, ssl.SSLSocket)):
        return None
    return ssl_object.getpeercert(binary_form=True)


_UNLIMITED_PATHS = frozenset({"/healthz", "/livez", "/readyz"})

MIDDLEWARES = (request_pipeline,)
