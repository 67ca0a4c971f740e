"""The integer fast path for metric values gives exactly the strings `Quantity` gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubecommon.quantity import Quantity, format_milli, milli_from_float

INT64 = 2**63 - 1


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.integers(min_value=-INT64, max_value=INT64),
                 st.integers(min_value=0, max_value=10**6).map(lambda m: m * 1000),
                 st.integers(min_value=1, max_value=10**12).map(lambda m: m * 10**6)))
def test_format_milli_matches_quantity(milli: int) -> None:
    assert format_milli(milli) == str(Quantity.from_milli(milli))


@pytest.mark.parametrize(("value", "text"), [
    pytest.param(0.5, "500m", id="half"),
    pytest.param(0.016, "16m", id="walkthrough 16m"),
    pytest.param(1500.0, "1500", id="1500 stays"),
    pytest.param(2e6, "2M", id="2M"),
    pytest.param(0.0004, "0", id="sub-milli truncates"),
    pytest.param(-3.5, "-3500m", id="negative"),
    pytest.param(float("nan"), "0", id="NaN is 0"),
    pytest.param(float("inf"), "9223372036854775807m", id="+Inf clamps"),
])
def test_prometheus_adapter_conversion(value: float, text: str) -> None:
    assert format_milli(milli_from_float(value)) == text == str(Quantity.from_float(value))
