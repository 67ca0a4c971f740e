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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapter.prometheus.api import Sample
from adapter.prometheus.errors import PrometheusBadResponse

__all__ = ["parse_query_data"]

_new_tuple = tuple.__new__
_NUMBER_TYPES = (int, float)


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
