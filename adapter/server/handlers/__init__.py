"""aiohttp handlers, one module per concern; each exposes `register(app, ...)`.

Infrastructure (E1): discovery, openapi, health, metrics. Metrics APIs (E2): custom_metrics,
external_metrics, resource_metrics. The route table is assembled in `adapter.server.routes`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from aiohttp import web

from kubecommon.lru import LRUCache

__all__ = ["KEPT_REQUESTS", "ParsedRequests", "compact_json", "json_body", "json_response"]

#: parsed requests kept per handler: an HPA or a KEDA scaler sends the same path and selectors
#: every sync period
KEPT_REQUESTS = 1024
_Key = TypeVar("_Key", bound=tuple[Any, ...])
_Request = TypeVar("_Request")


class ParsedRequests(Generic[_Key, _Request]):
    """A handler's parsed requests, by the path and query values its `parse` reads (the key holds
    them in `parse`'s argument order).

    Parsing is pure and its answer immutable, and parsing an HPA's label selector alone costs
    16-54 µs; a request that fails to parse keeps nothing (it is parsed, and refused, again).
    """

    def __init__(self, parse: Callable[..., _Request], kept: int = KEPT_REQUESTS) -> None:
        self._parse = parse
        self._kept: LRUCache[_Key, _Request] = LRUCache(kept)

    def __len__(self) -> int:
        return len(self._kept)

    def parse(self, key: _Key) -> _Request:
        return self._kept.get_or_compute(key, lambda: self._parse(*key))


def compact_json(document: object) -> bytes:
    """The document as compact JSON, as kube-apiserver writes it (no spaces)."""
    return json.dumps(document, separators=(",", ":")).encode()


def json_body(body: bytes) -> web.Response:
    """An already encoded JSON body, with the exact Content-Type client-go's decoders select on."""
    return web.Response(body=body, content_type="application/json")


def json_response(document: object) -> web.Response:
    return json_body(compact_json(document))
