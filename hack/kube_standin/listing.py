"""List and watch: selectors, pagination with continue tokens, and the watch event stream.

Watch semantics follow kube-apiserver: no resourceVersion (or "0") starts with synthetic ADDED
events for the current state; a version resumes after it, or answers an ERROR event carrying a
410 Expired Status when that version left the retained window; a version from the future (the
server is behind the client, e.g. restarted with other contents) is waited for up to 3 s, then a
LIST, or a watch with `sendInitialEvents`, answers kube-apiserver's 504 "Too large resource
version" (cause `ResourceVersionTooLarge`), while a plain watch stays open and sends only events
newer than that version, as kube-apiserver's watch cache does; objects moving in or out of a
label/field selector appear as ADDED/DELETED; bookmarks when asked for (`allowWatchBookmarks`),
including the `k8s.io/initial-events-end` one of `sendInitialEvents`. Non-goals: consistent
snapshots across pages (a continue token resumes after the last key against current state).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Callable

from aiohttp import web

from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import SelectorError, parse_selector
from kubecommon.status import BadRequest, Gone, Timeout

from . import conversion, strategies
from .resources import ResourceType
from .store import Entry, Event, Obj, Store, TooOldResourceVersion, encode

Matcher = Callable[[Obj], bool]


def matcher(rt: ResourceType, query: Any) -> Matcher | None:
    try:
        labels = parse_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
    except SelectorError as e:
        raise BadRequest(str(e)) from None
    strategies.check_field_selector_keys(rt, [r.field for r in fields.requirements])
    if labels.is_empty() and not fields.requirements:
        return None

    def matches(obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if not labels.matches(meta.get("labels") or {}):
            return False
        return not fields.requirements or fields.matches(strategies.field_set(rt, obj))
    return matches


#: how long kube-apiserver's watch cache waits to catch up with a requested resourceVersion
FRESHNESS_WAIT = 3.0


async def wait_until_fresh(store: Store, query: Any) -> None:
    """Wait until the store reached the requested resourceVersion; 504 Too large after 3 s."""
    text = query.get("resourceVersion", "")
    wanted = 0 if text in ("", "0") else _int(text, "resourceVersion")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FRESHNESS_WAIT
    while wanted > store.revision:
        if loop.time() >= deadline:
            raise too_large(wanted, store.revision)
        await asyncio.sleep(0.05)


def too_large(wanted: int, current: int) -> Timeout:
    return Timeout(f"Too large resource version: {wanted}, current: {current}", details={
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1})


def view(rt: ResourceType, obj: Obj) -> Obj:
    """The object as this resource type presents it (events.k8s.io reads core Events)."""
    return conversion.from_storage(rt, obj)


def _continue_token(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(key) + "\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _parse_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError):
        raise BadRequest(f'continue key is not valid: "{token}"') from None


def list_page(store: Store, rt: ResourceType, namespace: str | None,
              query: Any) -> tuple[list[Entry], dict[str, Any]]:
    """The selected entries of one page and the list metadata (resourceVersion, continue)."""
    match = matcher(rt, query)
    entries = store.entries(rt.storage_key, namespace)
    if match is not None:
        entries = [e for e in entries if match(e.obj)]
    rv = store.revision
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    token = query.get("continue", "")
    if token:
        rv, start = _parse_continue(token)
        meta["resourceVersion"] = str(rv)
        entries = [e for e in entries if _key_str(e) >= start]
    limit = _int(query.get("limit", "0"), "limit")
    if limit > 0 and len(entries) > limit:
        last = entries[limit - 1].obj["metadata"]
        meta["continue"] = _continue_token(rv, (last.get("namespace", ""), last["name"]))
        meta["remainingItemCount"] = len(entries) - limit
        entries = entries[:limit]
    return entries, meta


def list_body(store: Store, rt: ResourceType, namespace: str | None, query: Any) -> bytes:
    entries, meta = list_page(store, rt, namespace, query)
    head = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta}
    prefix = json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"items":['
    if conversion.storage_view(rt):
        items = [encode(view(rt, e.obj)) for e in entries]
    else:
        items = [e.encoded for e in entries]
    return b"".join((prefix, b",".join(items), b"]}"))


def _key_str(entry: Entry) -> str:
    meta = entry.obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _int(text: str, name: str) -> int:
    try:
        return int(text or 0)
    except ValueError:
        raise BadRequest(f"invalid {name}: {text!r}") from None


def _visible(obj: Obj | None, namespace: str | None, match: Matcher | None) -> bool:
    if obj is None:
        return False
    if namespace is not None and (obj.get("metadata") or {}).get("namespace", "") != namespace:
        return False
    return match is None or match(obj)


def translate(event: Event, namespace: str | None, match: Matcher | None) -> tuple[str, Obj] | None:
    """The event a filtered watcher sees (selector transitions become ADDED/DELETED)."""
    now = _visible(event.obj, namespace, match)
    before = _visible(event.prev, namespace, match)
    if event.type == "ADDED":
        return ("ADDED", event.obj) if now else None
    if event.type == "DELETED":
        return ("DELETED", event.obj) if before or now else None
    if now and before:
        return ("MODIFIED", event.obj)
    if now:
        return ("ADDED", event.obj)
    if before:
        return ("DELETED", event.obj)
    return None


Render = Callable[[ResourceType, Obj], Obj]


def _line(rt: ResourceType, kind: str, obj: Obj, render: Render | None = None) -> bytes:
    shown = render(rt, view(rt, obj)) if render and kind != "BOOKMARK" else view(rt, obj)
    return b'{"type":"' + kind.encode() + b'","object":' + encode(shown) + b"}\n"


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    return _line(rt, "BOOKMARK", obj)


async def watch(request: web.Request, store: Store, rt: ResourceType, namespace: str | None,
                *, bookmark_interval: float, render: Render | None = None) -> web.StreamResponse:
    """Stream watch events; `render` turns each object into what the client asked for (Table)."""
    query = request.query
    match = matcher(rt, query)
    rv_text = query.get("resourceVersion", "")
    since = None if rv_text in ("", "0") else _int(rv_text, "resourceVersion")
    initial = query.get("sendInitialEvents") == "true" or since is None
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    timeout = float(_int(query.get("timeoutSeconds", "0"), "timeoutSeconds") or 1800)
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    try:
        if since is not None and query.get("sendInitialEvents") == "true":
            await wait_until_fresh(store, query)
        watcher, backlog = store.watch(rt.storage_key, since)
    except (TooOldResourceVersion, Timeout) as e:
        await resp.prepare(request)
        error = e if isinstance(e, Timeout) else Gone(f"too old resource version: {e.requested} ({e.oldest})")
        await resp.write(b'{"type":"ERROR","object":' + encode(error.to_dict()) + b"}\n")
        return resp
    try:
        await resp.prepare(request)
        chunk: list[bytes] = []
        if initial:
            for entry in store.entries(rt.storage_key, namespace):
                if match is None or match(entry.obj):
                    chunk.append(_line(rt, "ADDED", entry.obj, render))
            if query.get("sendInitialEvents") == "true" and bookmarks:
                chunk.append(_bookmark(rt, store.revision, initial_end=True))
        for event in backlog:
            seen = translate(event, namespace, match)
            if seen:
                chunk.append(_line(rt, *seen, render))
        if chunk:
            await resp.write(b"".join(chunk))
        await _stream(resp, watcher, rt, namespace, match, store, render=render, since=since or 0,
                      timeout=timeout, bookmark_interval=bookmark_interval if bookmarks else None)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        store.unwatch(rt.storage_key, watcher)
    return resp


async def _stream(resp: web.StreamResponse, watcher: Any, rt: ResourceType,
                  namespace: str | None, match: Matcher | None, store: Store, *,
                  timeout: float, bookmark_interval: float | None,
                  render: Render | None, since: int = 0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_rv = store.revision
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        wait = min(remaining, bookmark_interval or remaining)
        try:
            event = await asyncio.wait_for(watcher.queue.get(), wait)
        except asyncio.TimeoutError:
            if bookmark_interval and loop.time() < deadline:
                await resp.write(_bookmark(rt, max(last_rv, store.revision)))
            continue
        if event is None:
            return
        last_rv = event.rv
        if event.rv <= since:
            continue  # not newer than the version the client asked to start after
        seen = translate(event, namespace, match)
        if seen:
            await resp.write(_line(rt, *seen, render))
