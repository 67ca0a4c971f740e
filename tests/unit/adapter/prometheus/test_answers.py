"""Instant-query values are exactly what `float()` reads from Prometheus' text, whichever path parses them.

A well-formed vector answer is read from its bytes in C (`well_formed_vector`: schema-checked
decode, value texts parsed together as one JSON array); any other answer (a text that is not a
JSON number such as `NaN` or `+Inf`, a malformed sample, an error) is left to the per-sample check
(`parse_query_data`). Both must give the same samples, floats bit for bit, and a text that is not
a number on its own is refused even when it would parse inside the joined array.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import orjson

from adapter.prometheus.answers import parse_query_data, well_formed_vector
from adapter.prometheus.errors import PrometheusBadResponse

T = 1764106000.123


def vector(*texts: str) -> dict[str, Any]:
    return {"resultType": "vector",
            "result": [{"metric": {"pod": f"p{i}"}, "value": [T, text]} for i, text in enumerate(texts)]}


def answer(data: dict[str, Any], **extra: Any) -> bytes:
    return orjson.dumps({"status": "success", "data": data, **extra})


def read(data: dict[str, Any]) -> list[Any]:
    """What the client gets for `data`: the fast path's samples when it takes the answer (then
    they must equal the per-sample check's), else the per-sample check's."""
    checked = parse_query_data(data, "/api/v1/query")
    fast = well_formed_vector(answer(data))
    if fast is None:
        return checked
    assert [tuple(s) for s in fast] == [tuple(s) for s in checked]
    assert all(same_float(f.value, c.value) for f, c in zip(fast, checked, strict=True))
    return fast


def same_float(a: float, b: float) -> bool:
    """Equal including NaN and the sign of zero."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


VALUE_TEXTS = [
    ("17 significant digits", ["1.0333333333333334", "0.30000000000000004"]),
    ("integers", ["0", "12", "-7"]),
    ("negative zero keeps its sign", ["-0", "1.5"]),
    ("exponents", ["1e5", "2.5e-3", "1E-7"]),
    ("beyond float64 precision", ["9007199254740993", "123456789012345678901234567890"]),
    ("underflow to zero", ["1e-400"]),
    ("overflow to infinity", ["1e400", "-1e400"]),
    ("Prometheus' NaN and infinities", ["NaN", "+Inf", "-Inf", "0.5"]),
    ("integers and fractions mixed", ["0", "0.25", "3"]),
    ("surrounding spaces", [" 1", "2 "]),
    ("Python-only spellings", ["1_000", "infinity"]),
]


@pytest.mark.parametrize("texts", [case[1] for case in VALUE_TEXTS], ids=[case[0] for case in VALUE_TEXTS])
def test_values_are_what_float_reads(texts: list[str]) -> None:
    samples = read(vector(*texts))
    assert [s.labels["pod"] for s in samples] == [f"p{i}" for i in range(len(texts))]
    assert all(same_float(s.value, float(text)) for s, text in zip(samples, texts, strict=True))
    assert all(s.timestamp == T for s in samples)


NOT_NUMBERS = [
    ("two numbers in one text", ["1,2", " "], 0),
    ("a number split over two texts", ["1", ".5,"], 1),
    ("an array inside a text", ["[1]"], 0),
    ("a JSON string inside a text", ['"1"'], 0),
    ("empty text", ["1", ""], 1),
    ("JSON literal", ["true"], 0),
]


@pytest.mark.parametrize(("texts", "index"), [case[1:] for case in NOT_NUMBERS], ids=[case[0] for case in NOT_NUMBERS])
def test_a_text_that_is_not_a_number_on_its_own_is_refused(texts: list[str], index: int) -> None:
    with pytest.raises(PrometheusBadResponse) as caught:
        parse_query_data(vector(*texts), "/api/v1/query")
    assert caught.value.problem == f"sample {index} of the vector: the value is not a number"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                          st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.17g}"),
                          st.integers(min_value=-(10**20), max_value=10**20).map(str),
                          st.decimals(allow_nan=False, allow_infinity=False, places=12).map(str)),
                min_size=1, max_size=30))
def test_any_numeric_texts_parse_like_float(texts: list[str]) -> None:
    assert well_formed_vector(answer(vector(*texts))) is not None  # JSON numbers all: the fast path
    samples = read(vector(*texts))
    assert all(same_float(s.value, float(text)) for s, text in zip(samples, texts, strict=True))


# orjson refuses a number beyond float64 (`1e400`): that answer is left to the check, as `NaN` is
JSON_NUMBER_CASES = ["17 significant digits", "integers", "negative zero keeps its sign", "exponents",
                     "beyond float64 precision", "underflow to zero",
                     "integers and fractions mixed"]


@pytest.mark.parametrize("texts", [case[1] for case in VALUE_TEXTS if case[0] in JSON_NUMBER_CASES],
                         ids=[case[0] for case in VALUE_TEXTS if case[0] in JSON_NUMBER_CASES])
def test_a_well_formed_answer_takes_the_fast_path(texts: list[str]) -> None:
    samples = well_formed_vector(answer(vector(*texts)))
    assert samples is not None
    assert all(same_float(s.value, float(text)) for s, text in zip(samples, texts, strict=True))
    assert [(s.labels, s.timestamp) for s in samples] == [({"pod": f"p{i}"}, T) for i in range(len(texts))]


def _sample(metric: Any = None, value: Any = None) -> dict[str, Any]:
    return {"resultType": "vector", "result": [
        {"metric": {"pod": "a"}, "value": [T, "1"]},
        {"metric": {"pod": "b"} if metric is None else metric, "value": [T, "2"] if value is None else value}]}


LEFT_TO_THE_CHECK = [
    ("label value a number", answer(_sample(metric={"pod": 5}))),
    ("label value null", answer(_sample(metric={"pod": None}))),
    ("label value an object", answer(_sample(metric={"pod": {"x": "y"}}))),
    ("labels not an object", answer(_sample(metric=["pod"]))),
    ("value not a pair", answer(_sample(value=[T]))),
    ("value a bare number", answer(_sample(value=[T, 2.0]))),
    ("time a string", answer(_sample(value=[str(T), "2"]))),
    ("NaN text", answer(_sample(value=[T, "NaN"]))),
    ("+Inf text", answer(_sample(value=[T, "+Inf"]))),
    ("two numbers in one text", answer(_sample(value=[T, "1,2"]))),
    ("a scalar", answer({"resultType": "scalar", "result": [T, "1"]})),
    ("a matrix", answer({"resultType": "matrix", "result": []})),
    ("warnings to log", answer(_sample(), warnings=["results truncated"])),
    ("an error document", orjson.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"})),
    ("not JSON", b"<html>bad gateway</html>"),
    ("truncated", answer(_sample())[:-5]),
]


@pytest.mark.parametrize("raw", [case[1] for case in LEFT_TO_THE_CHECK], ids=[case[0] for case in LEFT_TO_THE_CHECK])
def test_any_other_answer_is_left_to_the_check_that_names_it(raw: bytes) -> None:
    assert well_formed_vector(raw) is None
