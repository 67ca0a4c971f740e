"""The streaming `/api/v1/series` decoder refuses an answer whole when any item is not a label
set of strings, wherever the item sits and however the body is cut into chunks."""

from __future__ import annotations

import json

import pytest

from adapter.prometheus.series_stream import SeriesStreamDecoder, StreamError


def _body(items: list[object]) -> bytes:
    return json.dumps({"status": "success", "data": items}).encode()


def _decode(body: bytes, chunk: int) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []
    decoder = SeriesStreamDecoder(seen.append)
    for at in range(0, len(body), chunk):
        decoder.feed(body[at:at + chunk])
    assert decoder.finish() is None
    return seen


GOOD = [{"__name__": "up", "pod": f"web-{i}"} for i in range(9)]


@pytest.mark.parametrize("chunk", [7, 64, 10_000])
def test_good_answer_streams_every_series(chunk: int) -> None:
    assert _decode(_body(GOOD), chunk) == GOOD


@pytest.mark.parametrize("chunk", [7, 64, 10_000])
@pytest.mark.parametrize("at", [0, 4, 8])
@pytest.mark.parametrize("bad", [5, None, ["web"], {"x": "y"}])
def test_a_label_value_that_is_not_a_string_anywhere_fails_the_answer(chunk: int, at: int, bad: object) -> None:
    items: list[object] = [dict(item) for item in GOOD]
    items[at] = {"__name__": "up", "pod": bad}
    with pytest.raises(StreamError, match="label value that is not a string"):
        _decode(_body(items), chunk)
