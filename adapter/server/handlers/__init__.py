"""aiohttp handlers, one module per concern; each exposes `register(app, ...)`.

Infrastructure (E1): discovery, openapi, health, metrics. Metrics APIs (E2): custom_metrics,
external_metrics, resource_metrics. The route table is assembled in `adapter.server.routes`.
"""

from __future__ import annotations

import json

from aiohttp import web

__all__ = ["compact_json", "json_body", "json_response"]


def compact_json(document: object) -> bytes:
    """The document as compact JSON, as kube-apiserver writes it (no spaces)."""
    return json.dumps(document, separators=(",", ":")).encode()


def json_body(body: bytes) -> web.Response:
    """An already encoded JSON body, with the exact Content-Type client-go's decoders select on."""
    return web.Response(body=body, content_type="application/json")


def json_response(document: object) -> web.Response:
    return json_body(compact_json(document))
