"""One in-process Kubernetes API server for tests and benchmarks, on the stand-in's store and patches.

Job: serve on loopback (HTTP, or HTTPS with a fresh CA) discovery documents a configuration gives;
LIST (namespace, label and `metadata.name` selectors, `limit`/`continue`) and WATCH (resume from a
resourceVersion or start with the current state; selector transitions as ADDED/DELETED; ERROR 410
once the version was compacted) of any collection; GET/POST/PUT/PATCH/DELETE with 409s; `status`;
a `scale` derived from the object as kube-apiserver derives it for workloads. Built on
`store.Store`, `patch.apply_patch`, `listing.translate` and `kubecommon.requestinfo`.

Hooks play what a real cluster does now and then: `conflicts` (the next N writes lose a race),
`hold_events`/`release()` (a lagging watch), `forbidden` (403 on LIST/WATCH), `answers`, `delay`,
`drop_watch_after`, `compact()`, `guard` (authentication, forced errors), `routes` (paths the store
does not serve: metrics APIs, reviews) and `describe` (what `calls` records of a request).
Non-goals: validation, defaulting, RBAC, admission: `server.py` is the strict server.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubecommon.fieldselectors import parse_field_selector
from kubecommon.requestinfo import RequestInfo, derive_request_info
from kubecommon.selectors import SelectorError, parse_selector
from kubecommon.status import (AlreadyExists, BadRequest, Conflict, Forbidden, Gone, NotFound, StatusError,
                               Unauthorized)
from kubecommon.status_response import status_response

from .listing import translate
from .patch import apply_patch
from .pki import loopback_serving_context
from .store import Event, Obj, Store, TooOldResourceVersion

__all__ = ["Handler", "InProcessAPIServer", "collection_of", "scale_of", "status", "unauthorized"]

Handler = Callable[[web.Request, RequestInfo], Awaitable[web.StreamResponse | None]]
_CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


def status(code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> web.Response:
    """A metav1.Status answer with any code and reason (for configurations' forced errors)."""
    error = StatusError(message, details=details)
    body = {**error.to_dict(), "code": code, "reason": reason}
    return web.json_response(body, status=code)


def collection_of(info: RequestInfo) -> str:
    """The collection path without its namespace: /apis/apps/v1/deployments, /api/v1/pods."""
    group = f"{info.api_group}/" if info.api_group else ""
    return f"/{info.api_prefix}/{group}{info.api_version}/{info.resource}"


@dataclass(slots=True, kw_only=True, frozen=False, eq=False)  # frozen=False: a live stream
class _Watch:
    collection: str
    namespace: str | None
    match: Callable[[Obj], bool] | None
    queue: asyncio.Queue[bytes]


class InProcessAPIServer:
    """Configure through the attributes below, `start()`, then read `url`; `close()` at the end."""

    def __init__(self, *, discovery: Mapping[str, Any] | None = None, revision: int = 1,
                 log_size: int = 10_000) -> None:
        self.store = Store(log_size=log_size, revision=revision)
        self.store.on_commit(self._committed)
        self.discovery: dict[str, Any] = dict(discovery or {})
        self.calls: list[str] = []
        self.answers: dict[str, tuple[int, Any]] = {}
        self.delay = 0.0
        self.forbidden: set[str] = set()  # collection paths whose LIST/WATCH answer 403
        self.conflicts = 0  # the next N writes find the resourceVersion moved: 409
        self.hold_events = False
        self.held: list[tuple[str, Event]] = []
        self.drop_watch_after: int | None = None
        self.guard: Handler | None = None
        self.routes: list[tuple[str, Handler]] = []  # (path prefix, handler) tried in order
        self.describe: Callable[[web.Request, RequestInfo], str | None] = \
            lambda request, info: f"{request.method} {request.path}"
        self.client_max_size = 16 * 1024 * 1024
        self.ca_pem: bytes | None = None
        self._watches: list[_Watch] = []
        self._event_type: str | None = None
        self._runner: web.AppRunner | None = None
        self._url = ""

    # --- lifecycle ----------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.client_max_size)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def start(self, *, tls: bool = False, port: int = 0) -> str:
        context = None
        if tls:
            context, self.ca_pem = loopback_serving_context()
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=context, backlog=1024)
        await site.start()
        bound = self._runner.addresses[0][1]
        self._url = f"{'https' if tls else 'http'}://127.0.0.1:{bound}"
        return self._url

    @property
    def url(self) -> str:
        assert self._url, "start() first"
        return self._url

    async def close(self) -> None:
        for watch in self._watches:
            watch.queue.put_nowait(b"")
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- state --------------------------------------------------------------------------------
    @property
    def rv(self) -> int:
        return self.store.revision

    def put(self, collection: str, obj: Obj, event: str | None = None) -> Obj:
        """Store `obj` (a copy, with the next resourceVersion) in `collection`; watchers see
        `event` (default ADDED or MODIFIED, as it is new or not). Returns the stored object."""
        return self._commit(collection, obj, event)

    def _commit(self, collection: str, obj: Obj, event: str | None = None) -> Obj:
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        rv = self.store.next_rv()
        meta["resourceVersion"] = str(rv)
        self._event_type = event
        try:
            self.store.put(_storage(collection), (meta.get("namespace", ""), meta["name"]), stored, rv=rv)
        finally:
            self._event_type = None
        return stored

    def get(self, collection: str, namespace: str, name: str) -> Obj | None:
        return self.store.get(_storage(collection), (namespace, name))

    def objects(self, collection: str, namespace: str | None = None) -> list[Obj]:
        return self.store.objects(_storage(collection), namespace)

    def delete(self, collection: str, namespace: str, name: str) -> Obj:
        """Remove an object (watchers see DELETED); returns it as deleted (KeyError if absent)."""
        return self._remove(collection, namespace, name)

    def _remove(self, collection: str, namespace: str, name: str) -> Obj:
        obj = self.get(collection, namespace, name)
        if obj is None:
            raise KeyError((collection, namespace, name))
        rv = self.store.next_rv()
        final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}
        self.store.remove(_storage(collection), (namespace, name), final=final, rv=rv)
        return final

    def release(self) -> None:
        """Deliver the events held while `hold_events` was set, and stop holding."""
        self.hold_events = False
        held, self.held = self.held, []
        for collection, event in held:
            self._fan_out(collection, event)

    def compact(self) -> None:
        """Forget history up to now: a watch from any version so far, open or new, gets 410."""
        self.store.compact()
        for watch in self._watches:
            watch.queue.put_nowait(_expired_line())

    def _committed(self, storage: tuple[str, str], event: Event) -> None:
        if self._event_type is not None and event.type != "DELETED":
            event = Event(rv=event.rv, type=self._event_type, obj=event.obj, prev=event.prev)
        if self.hold_events:
            self.held.append((storage[0], event))
        else:
            self._fan_out(storage[0], event)

    def _fan_out(self, collection: str, event: Event) -> None:
        for watch in self._watches:
            if watch.collection != collection:
                continue
            if (seen := translate(event, watch.namespace, watch.match)) is not None:
                watch.queue.put_nowait(_line(*seen))

    # --- HTTP ---------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            info = derive_request_info(request.method, request.path, request.query)
            described = self.describe(request, info)
            if described is not None:
                self.calls.append(described)
            return await self._dispatch(request, info)
        except StatusError as error:
            return status_response(error)

    async def _dispatch(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if self.guard is not None and (answer := await self.guard(request, info)) is not None:
            return answer
        if request.path in self.answers:
            await asyncio.sleep(self.delay)
            code, body = self.answers[request.path]
            text = body if isinstance(body, str) else json.dumps(body)
            return web.Response(status=code, text=text, content_type="application/json")
        if request.method == "GET" and request.path in self.discovery:
            return web.json_response(self.discovery[request.path])
        for prefix, handler in self.routes:
            if request.path.startswith(prefix):
                await asyncio.sleep(self.delay)
                if (answer := await handler(request, info)) is not None:
                    return answer
        if not info.is_resource_request or not info.resource:
            raise NotFound.for_path()
        return await self._resource(request, info)

    async def _resource(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        collection = collection_of(info)
        if not self._served(info, collection):
            raise NotFound.for_path()
        if info.verb in ("list", "watch") and collection in self.forbidden:
            raise Forbidden(f'{info.resource} is forbidden: cannot {info.verb} resource "{info.resource}"')
        if info.verb == "list":
            return self._list(request, collection, info)
        if info.verb == "watch":
            return await self._watch(request, collection, info)
        if info.verb == "create":
            return self._create(collection, info, await request.json())
        if info.verb == "deletecollection":
            raise BadRequest("deletecollection is not served")
        current = self.get(collection, info.namespace, info.name)
        if current is None:
            raise NotFound.for_object(info.resource, info.api_group, info.name)
        if info.verb == "delete":
            return web.json_response(self._remove(collection, info.namespace, info.name))
        if info.subresource == "scale":
            return await self._scale(request, collection, info, current)
        if info.verb == "get":
            return web.json_response(current)
        body = await request.json()
        updated = self._updated(request, info, current, body)
        return web.json_response(self._commit(collection, updated, "MODIFIED"))

    def _served(self, info: RequestInfo, collection: str) -> bool:
        """A group-version's discovery document, when given, says which collections it serves; a
        version missing from a group that has a document is not served; anything else is."""
        doc = self.discovery.get(collection.rsplit("/", 1)[0])
        if doc is not None:
            return any(entry.get("name") == info.resource for entry in doc.get("resources", ()))
        return not (info.api_group and f"/apis/{info.api_group}" in self.discovery)

    def _updated(self, request: web.Request, info: RequestInfo, current: Obj, body: Any) -> Obj:
        """The object a PUT or PATCH (of the object or its status) leaves, after the conflict check."""
        if self.conflicts > 0:  # another writer got there first
            self.conflicts -= 1
            current = self._commit(collection_of(info), current, "MODIFIED")
        if info.verb == "patch":
            target = apply_patch(copy.deepcopy(current), body, request.content_type, strategic_allowed=True)
        else:
            sent = (body.get("metadata") or {}).get("resourceVersion")
            if sent and sent != current["metadata"]["resourceVersion"]:
                raise Conflict.for_object(info.resource, info.api_group, info.name, _CONFLICT)
            target = body
        if info.subresource == "status":
            return {**current, "status": target.get("status")}
        kept = {k: v for k, v in current["metadata"].items() if k in ("uid", "creationTimestamp")}
        updated = {**target, "metadata": {**target.get("metadata", {}), **kept}}
        if "status" in current and info.verb == "update":
            updated["status"] = current["status"]  # a PUT of the object leaves its status alone
        return updated

    def _create(self, collection: str, info: RequestInfo, body: Obj) -> web.Response:
        meta = body.setdefault("metadata", {})
        if info.namespace:
            meta["namespace"] = info.namespace
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', 'obj-')}{self.store.revision:08x}"
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        if self.get(collection, meta.get("namespace", ""), meta["name"]) is not None:
            raise AlreadyExists.for_object(info.resource, info.api_group, meta["name"])
        return web.json_response(self._commit(collection, body, "ADDED"), status=201)

    async def _scale(self, request: web.Request, collection: str, info: RequestInfo,
                     current: Obj) -> web.Response:
        if info.verb in ("update", "patch"):
            body = await request.json()
            sent = (body.get("metadata") or {}).get("resourceVersion")
            if self.conflicts > 0:
                self.conflicts -= 1
                current = self._commit(collection, current, "MODIFIED")
            if sent and sent != current["metadata"]["resourceVersion"]:
                raise Conflict.for_object(f"{info.resource}/scale", info.api_group, info.name, _CONFLICT)
            updated = copy.deepcopy(current)
            updated.setdefault("spec", {})["replicas"] = int((body.get("spec") or {}).get("replicas") or 0)
            current = self._commit(collection, updated, "MODIFIED")
        return web.json_response(scale_of(current))

    def _list(self, request: web.Request, collection: str, info: RequestInfo) -> web.Response:
        match = _matcher(request.query)
        items = self.objects(collection, info.namespace or None)
        if match is not None:
            items = [obj for obj in items if match(obj)]
        limit = _int(request.query.get("limit", ""))
        start = _int(request.query.get("continue", ""))
        meta: dict[str, Any] = {"resourceVersion": str(self.store.revision)}
        page = items[start:start + limit] if limit else items[start:]
        if limit and start + limit < len(items):
            meta["continue"] = str(start + limit)
        return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page})

    async def _watch(self, request: web.Request, collection: str, info: RequestInfo) -> web.StreamResponse:
        text = request.query.get("resourceVersion", "")
        since = _int(text)
        watch = _Watch(collection=collection, namespace=info.namespace or None, match=_matcher(request.query),
                       queue=asyncio.Queue())
        if since:
            try:
                backlog = self.store.events_since(_storage(collection), since)
            except TooOldResourceVersion:
                backlog = []
                watch.queue.put_nowait(_expired_line())
            for event in backlog:
                if (seen := translate(event, watch.namespace, watch.match)) is not None:
                    watch.queue.put_nowait(_line(*seen))
        else:  # no version: the current state as ADDED events first
            for obj in self.objects(collection, watch.namespace):
                if watch.match is None or watch.match(obj):
                    watch.queue.put_nowait(_line("ADDED", obj))
        self._watches.append(watch)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        timeout = float(request.query.get("timeoutSeconds") or 300)
        sent = 0
        try:
            while True:
                line = await asyncio.wait_for(watch.queue.get(), timeout)
                if not line:
                    break
                await response.write(line)
                sent += 1
                if line.startswith(b'{"type":"ERROR"') or sent == self.drop_watch_after:
                    break
        except (asyncio.TimeoutError, ConnectionResetError):
            pass
        finally:
            self._watches.remove(watch)
        return response


def scale_of(obj: Obj) -> Obj:
    """The autoscaling/v1 Scale kube-apiserver derives from a workload (selector omitted when empty)."""
    meta, spec, state = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    selector = state.get("selector") if isinstance(state.get("selector"), str) else ",".join(
        f"{k}={v}" for k, v in sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items()))
    scale_status: dict[str, Any] = {"replicas": int(state.get("replicas") or 0)}
    if selector:
        scale_status["selector"] = selector
    scale_meta = {k: meta[k] for k in ("name", "namespace", "resourceVersion", "uid", "creationTimestamp") if k in meta}
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": scale_meta,
            "spec": {"replicas": int(spec.get("replicas", 1))}, "status": scale_status}


def _storage(collection: str) -> tuple[str, str]:
    return collection, ""


def _line(kind: str, obj: Obj) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _expired_line() -> bytes:
    return _line("ERROR", Gone("too old resource version").to_dict())


def _int(text: str) -> int:
    try:
        return int(text or 0)
    except ValueError:
        raise BadRequest(f"not a number: {text!r}") from None


def _matcher(query: Mapping[str, str]) -> Callable[[Obj], bool] | None:
    try:
        labels = parse_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
    except SelectorError as error:
        raise BadRequest(str(error)) from None
    if labels.is_empty() and not fields.requirements:
        return None

    def matches(obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        known = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
        return labels.matches(meta.get("labels") or {}) and fields.matches(known)
    return matches


def unauthorized() -> web.Response:
    return status_response(Unauthorized("Unauthorized"))
