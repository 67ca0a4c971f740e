"""Incremental decoder for `/api/v1/series` answers.

A broad `seriesQuery` answers with every matching label set: 100k series are ~20 MB of JSON and
well over 100 MB as Python dicts (the GB-scale memory reports in prometheus-adapter's tracker).
`SeriesStreamDecoder` is fed the body in chunks and hands each label set to a sink as soon as it
is complete, so memory is bounded by the chunk size plus one series.

It understands `{"status":"success","data":[{...},...] ...}` in the order Prometheus (and
Thanos, Mimir, VictoriaMetrics) write it. Any other shape, e.g. an error document, is collected
whole and decoded by `finish()`, up to a size cap, so errors keep their message.
Pure: no I/O.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from adapter.prometheus.api import SeriesSink

__all__ = ["SeriesStreamDecoder", "StreamError", "check_series_item"]

_PREFIX = re.compile(r'\s*\{\s*"status"\s*:\s*"success"\s*,\s*"data"\s*:\s*\[\s*')
_SEPARATOR = re.compile(r"\s*(,|\])\s*")
_WHITESPACE = re.compile(r"\s*")
_MAX_FALLBACK = 64 * 1024 * 1024


class StreamError(ValueError):
    """The body is not a well-formed series answer."""


def check_series_item(item: object) -> dict[str, str]:
    """`item` if it is a label set (an object of string values); else StreamError. One bad item
    anywhere makes the whole answer unusable: a relist half built from it would serve some of the
    metrics and silently drop the others."""
    if not isinstance(item, dict):
        raise StreamError("series item is not an object")
    for value in item.values():
        if type(value) is not str:
            raise StreamError(f"series item has a label value that is not a string ({type(value).__name__})")
    return item


class SeriesStreamDecoder:
    """Feed bytes with `feed()`, then call `finish()`. Mutable by nature (a parser state)."""

    def __init__(self, sink: SeriesSink, *, max_fallback: int = _MAX_FALLBACK) -> None:
        self._sink = sink
        self._max_fallback = max_fallback
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._decoder = json.JSONDecoder()
        self._buffer = ""
        self._state = "prefix"  # prefix -> items -> tail | fallback
        self.count = 0

    def feed(self, chunk: bytes) -> None:
        self._buffer += self._utf8.decode(chunk)
        self._advance(final=False)

    def finish(self) -> dict[str, Any] | None:
        """End of body. Returns the whole document when it was not streamable (errors)."""
        self._buffer += self._utf8.decode(b"", final=True)
        self._advance(final=True)
        if self._state == "fallback":
            try:
                document = json.loads(self._buffer)
            except ValueError as exc:
                raise StreamError(f"not JSON: {exc}") from None
            if not isinstance(document, dict):
                raise StreamError("not a JSON object")
            return document
        if self._state != "tail":
            raise StreamError("truncated series answer")
        return None

    def _advance(self, *, final: bool) -> None:
        if self._state == "prefix":
            match = _PREFIX.match(self._buffer)
            if match is None:
                if final or len(self._buffer) > 256 or not self._could_be_prefix():
                    self._state = "fallback"
                return
            self._buffer = self._buffer[match.end():]
            self._state = "items"
        if self._state == "items":
            self._decode_items(final=final)
        elif self._state == "fallback" and len(self._buffer) > self._max_fallback:
            raise StreamError(f"answer is not a series list and is larger than {self._max_fallback} "
                              "bytes (--prometheus-max-answer-bytes)")

    def _could_be_prefix(self) -> bool:
        # True while the buffer may still grow into the expected prefix.
        candidate = re.sub(r"\s+", "", self._buffer)
        return '{"status":"success","data":['.startswith(candidate[:28])

    def _decode_batch(self, buf: str) -> int:
        """Decode everything before the last `},{` in one `json.loads` (C speed); returns the
        position after that separator, or 0 when there is none or it was inside a string.

        A cut inside a string leaves the left part ending inside an unterminated string, which
        can never parse, so a successful parse always ended at a real item boundary.
        """
        cut = buf.rfind("},{")
        if cut <= 0:
            return 0
        try:
            items = json.loads("[" + buf[: cut + 1] + "]")
        except ValueError:
            return 0
        for item in items:  # checked whole before any reaches the sink
            check_series_item(item)
        sink = self._sink
        for item in items:
            sink(item)
        self.count += len(items)
        return cut + 2

    def _decode_items(self, *, final: bool) -> None:
        buf, end = self._buffer, len(self._buffer)
        pos = self._decode_batch(buf)
        raw_decode = self._decoder.raw_decode
        while pos < end:
            pos = _WHITESPACE.match(buf, pos).end()  # type: ignore[union-attr]
            if pos == end:
                break
            if buf[pos] == "]":  # empty list
                self._state = "tail"
                pos += 1
                break
            try:
                item, stop = raw_decode(buf, pos)
            except json.JSONDecodeError:
                if final:
                    raise StreamError("truncated or malformed series item") from None
                break  # incomplete object: wait for more bytes
            sep = _SEPARATOR.match(buf, stop)
            if sep is None:
                if buf[stop:].strip() or final:
                    raise StreamError("malformed or truncated series list")
                break  # separator not received yet: decode this item again with more bytes
            check_series_item(item)
            self.count += 1
            self._sink(item)
            pos = sep.end()
            if sep.group(1) == "]":
                self._state = "tail"
                break
        self._buffer = buf[pos:]
