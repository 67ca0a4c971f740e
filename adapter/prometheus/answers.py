"""Instant-query answers checked against their result type before anyone uses them.

Prometheus (or a proxy in front of it, or a backend that only claims its API) promises, for
`resultType: vector`, a list of `{"metric": {name: string}, "value": [time, "number"]}` and for
`scalar` one `[time, "number"]` pair. Anything else (a value that is not such a pair, a label value
that is a number, null or an object, a result that is not a list) is refused here with a
`PrometheusBadResponse` whose `problem` says what and where, in our words only (never the
answer's text), so the Status a client gets can name it. `matrix` and `string` results are
refused with upstream's "unexpected query result type".

Sample values may be NaN or ±Inf (Prometheus' own spelling); what to do with them is the
services' decision, per item. Pure: no I/O. Non-goals: series answers (`series_stream`).

Two paths, one answer. `well_formed_vector` reads the raw bytes of the common answer (success,
a vector, every sample well formed, every value text a JSON number) in C: msgspec decodes and
type-checks the document against its schema (labels `dict[str, str]`, value `[number, string]`)
and the value texts are parsed as one JSON array by orjson (Python's `float()` of a 17-digit
decimal costs ~0.35 µs, more than everything else done for a sample). On a 2,000-sample answer
this is half the CPU of decoding to dicts and checking them in Python. Anything else (an error
document, warnings, a scalar, a malformed sample, a `NaN` or `+Inf` text) returns None, and the
whole document is decoded and checked here (`parse_query_data`), sample by sample
(`_checked_vector`), converting with `float()` and naming the first problem. Both paths give the
same samples for every answer the first accepts (tests compare them); `query_samples` is the
one place that chooses between them, for the client and the conformance runner alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import orjson

from adapter.prometheus.api import Sample
from adapter.prometheus.errors import PrometheusBadResponse

__all__ = ["parse_query_data", "query_samples", "well_formed_vector"]

_new_tuple = tuple.__new__
_NUMBER_TYPES = (int, float)
_ONLY_FLOAT, _NUMBER_TYPE_SET = {float}, set(_NUMBER_TYPES)


def parse_query_data(data: Any, path: str) -> list[Sample]:
    """The samples of a success document's `data`, or PrometheusBadResponse naming the problem."""
    if not isinstance(data, Mapping):
        raise _bad(path, "the answer's data is not an object")
    kind, result = data.get("resultType"), data.get("result")
    if kind == "vector":
        return _vector(result, path)
    if kind == "scalar":
        timestamp, value = _pair(result, path, "the scalar")
        return [Sample(labels={}, value=value, timestamp=timestamp)]
    shown = kind if isinstance(kind, str) and len(kind) <= 20 else type(kind).__name__
    raise _bad(path, f"unexpected query result type {shown!r} (want vector or scalar)")


def _vector(result: Any, path: str) -> list[Sample]:
    if type(result) is not list:
        raise _bad(path, "the vector result is not a list")
    return _checked_vector(result, path)


class _VectorSample(msgspec.Struct, gc=False):
    """One sample as Prometheus writes it; `gc=False`: it holds no containers that could cycle."""

    metric: dict[str, str]
    value: tuple[float, str]


class _VectorData(msgspec.Struct, gc=False):
    resultType: str
    result: list[_VectorSample]


class _VectorAnswer(msgspec.Struct, gc=False):
    status: str
    data: _VectorData
    warnings: Any = None  # present and not empty: the general path logs them


_VECTOR_ANSWER = msgspec.json.Decoder(_VectorAnswer)
_sample_metric, _sample_value = attrgetter("metric"), attrgetter("value")
_first, _second = itemgetter(0), itemgetter(1)


def query_samples(raw: bytes, path: str, document_data: Callable[[bytes], Any]) -> list[Sample]:
    """The samples of a 200 instant-query answer `raw`: read in C when it is a well-formed vector
    (`well_formed_vector`), else from `document_data(raw)` (the decoded document's `data`, or the
    error its document stands for) checked sample by sample (`parse_query_data`)."""
    samples = well_formed_vector(raw)
    return samples if samples is not None else parse_query_data(document_data(raw), path)


def well_formed_vector(raw: bytes) -> list[Sample] | None:
    """The samples of a success answer whose vector is well formed throughout and whose value
    texts are all JSON numbers; None for any other answer (then decode it and call
    `parse_query_data`, which names what is wrong or reads what this path does not)."""
    try:
        answer = _VECTOR_ANSWER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    data = answer.data
    if answer.status != "success" or data.resultType != "vector" or answer.warnings:
        return None
    result = data.result
    pairs = list(map(_sample_value, result))
    values = _parse_numbers(list(map(_second, pairs)))
    if values is None:
        return None
    return list(map(_new_tuple, repeat(Sample), zip(map(_sample_metric, result), values, map(_first, pairs),
                                                     strict=True)))


def _parse_numbers(texts: list[str]) -> list[float] | None:
    """`[float(t) for t in texts]`, parsed as one JSON array; None when one is not a JSON number
    (`NaN`, `+Inf`, garbage: the per-sample path handles those).

    Each text must yield exactly one element: a text that is not a number on its own either
    breaks the array (`,,`, a trailing comma) or changes the count, or yields a non-number type.
    JSON's number grammar is a subset of `float()`'s, and both round correctly, so every value
    is the same float; an integer text (`"0"`, `"-0"`) is read by `float()` to keep its sign.
    """
    try:
        numbers = orjson.loads("[" + ",".join(texts) + "]")
    except orjson.JSONDecodeError:
        return None
    if type(numbers) is not list or len(numbers) != len(texts):
        return None
    kinds = set(map(type, numbers))
    if kinds == _ONLY_FLOAT:
        return numbers
    if not kinds <= _NUMBER_TYPE_SET:
        return None
    return [number if type(number) is float else float(text) for number, text in zip(numbers, texts, strict=True)]


def _checked_vector(result: list[Any], path: str) -> list[Sample]:
    """Sample by sample, stopping at the first problem with an error that names it."""
    samples: list[Sample] = []
    append = samples.append
    for index, item in enumerate(result):
        metric = item.get("metric") if type(item) is dict else None
        if type(metric) is not dict:
            raise _bad(path, f"sample {index} of the vector has no label object")
        for name, value in metric.items():
            if type(value) is not str:
                raise _bad(path, f"sample {index} of the vector: label {_shown(name)} is a "
                                 f"{_json_type(value)}, not a string")
        pair = item.get("value")
        # The common case inline (this runs once per sample): [number, "number"].
        if type(pair) is list and len(pair) == 2 and type(pair[1]) is str \
                and type(pair[0]) in _NUMBER_TYPES:
            try:
                append(_new_tuple(Sample, (metric, float(pair[1]), float(pair[0]))))
                continue
            except ValueError:
                pass
        timestamp, number = _pair(pair, path, f"sample {index} of the vector")
        append(_new_tuple(Sample, (metric, number, timestamp)))
    return samples


def _pair(pair: Any, path: str, where: str) -> tuple[float, float]:
    """`[time, "number"]` → (time, value), or the problem with it."""
    if type(pair) is not list or len(pair) != 2:
        raise _bad(path, f'{where}: value is not a [time, "number"] pair')
    timestamp, text = pair
    if type(timestamp) not in _NUMBER_TYPES:
        raise _bad(path, f"{where}: the time is a {_json_type(timestamp)}, not a number")
    if type(text) is not str:
        raise _bad(path, f'{where}: the value is a {_json_type(text)}, not a "number" string')
    try:
        return float(timestamp), float(text)
    except ValueError:
        raise _bad(path, f"{where}: the value is not a number") from None


def _bad(path: str, problem: str) -> PrometheusBadResponse:
    return PrometheusBadResponse(f"malformed answer: {problem}", path=path, problem=problem)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
            dict: "object"}.get(type(value), type(value).__name__)


def _shown(name: Any) -> str:
    """A label name for the message: quoted, and cut if it is long (it came from the answer)."""
    text = str(name)
    return repr(text if len(text) <= 40 else text[:40] + "…")
