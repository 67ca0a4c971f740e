"""Reading aiohttp's answers from Prometheus: the size-limited body, error bodies, health and
status documents, and the one error for an answer over `--prometheus-max-answer-bytes` (which
`http1`'s reads raise too).

Non-goals: deciding what an answer means (`answers`, `PrometheusClient.raise_for_document`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from adapter.prometheus import errors
from kubecommon import kubetime

__all__ = ["MAX_ERROR_BODY", "decode_body", "read_error_body", "read_limited", "ready_from_status",
           "rfc3339", "status_field", "too_large"]

CHUNK = 256 * 1024
MAX_ERROR_BODY = 64 * 1024


async def read_limited(resp: aiohttp.ClientResponse, limit: int, path: str, promql: str) -> bytes:
    """The whole body, refused as soon as it passes `limit` bytes: never more than that in memory."""
    if resp.content_length is not None and resp.content_length > limit:
        raise too_large(limit, path, promql)
    chunks: list[bytes] = []
    total = 0
    async for chunk in resp.content.iter_chunked(CHUNK):
        total += len(chunk)
        if total > limit:
            raise too_large(limit, path, promql)
        chunks.append(chunk)
    return b"".join(chunks)


def too_large(limit: int, path: str, promql: str) -> errors.PrometheusAnswerTooLarge:
    return errors.PrometheusAnswerTooLarge(
        f"answer larger than {limit} bytes (--prometheus-max-answer-bytes) for query {promql[:2000]}",
        path=path, problem=f"Prometheus answered more than {_bytes(limit)} for one query "
                           "(--prometheus-max-answer-bytes); narrow the rule's query or raise the limit")


def _bytes(count: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


async def read_error_body(resp: aiohttp.ClientResponse) -> Any:
    return decode_body(await resp.content.read(MAX_ERROR_BODY))


def decode_body(raw: bytes) -> Any:
    """The JSON document, or the start of a non-JSON body as text for the error message."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw[:500].decode(errors="replace")


async def ready_from_status(resp: aiohttp.ClientResponse) -> tuple[bool | None, bool]:
    """(ready, unavailable): 200 ready; 404/405 the backend has no such endpoint (unknown);
    anything else not ready, and a 5xx or 429 says the backend is unavailable."""
    await resp.content.read(MAX_ERROR_BODY)
    unavailable = resp.status >= 500 or resp.status == 429
    if resp.status in (404, 405):
        return None, unavailable
    return resp.status == 200, unavailable


def status_field(pick: Callable[[Mapping[str, Any]], float | None],
                  ) -> Callable[[aiohttp.ClientResponse], Awaitable[float | None]]:
    """Reader of a `/api/v1/status/*` document: `pick(data)`, or None when absent or garbled."""
    async def read(resp: aiohttp.ClientResponse) -> float | None:
        body = decode_body(await resp.content.read(MAX_ERROR_BODY))
        if resp.status != 200 or not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
            return None
        return pick(body["data"])
    return read


def rfc3339(text: Any) -> float | None:
    """A Go `time.Time` in JSON (RFC 3339, `kubecommon.kubetime`) as epoch seconds; None when not one."""
    try:
        return kubetime.parse_time(text)
    except kubetime.TimeError:
        return None
