"""Instant-query values are exactly what `float()` reads from Prometheus' text, whichever path parses them.

A well-formed vector's value texts are parsed together (one JSON array); an answer with a text
that is not a JSON number (`NaN`, `+Inf`) is read sample by sample. Both must give the same float,
bit for bit, and a text that is not a number on its own is refused even when it would parse
inside the joined array.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.prometheus.answers import parse_query_data
from adapter.prometheus.errors import PrometheusBadResponse

T = 1764106000.123


def vector(*texts: str) -> dict[str, Any]:
    return {"resultType": "vector",
            "result": [{"metric": {"pod": f"p{i}"}, "value": [T, text]} for i, text in enumerate(texts)]}


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
    samples = parse_query_data(vector(*texts), "/api/v1/query")
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
    samples = parse_query_data(vector(*texts), "/api/v1/query")
    assert all(same_float(s.value, float(text)) for s, text in zip(samples, texts, strict=True))
