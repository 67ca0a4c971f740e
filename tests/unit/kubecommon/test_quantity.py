"""Quantity parsing and canonical strings, with the cases of apimachinery's quantity tests."""

import math
from decimal import Decimal

import pytest

from kubecommon.quantity import (
    Format,
    Quantity,
    QuantityError,
    QuantityOutOfRange,
    format_bytes,
    format_cpu_cores,
    format_decimal,
    format_milli,
    milli_from_float,
)

CANONICAL = [
    ("1.5", "1500m"), ("1500m", "1500m"), ("0.5", "500m"), (".5", "500m"), ("0.25", "250m"),
    ("1000", "1k"), ("1000m", "1"), ("1500", "1500"), ("2000", "2k"), ("1200000", "1200k"),
    ("8.1k", "8100"), ("100.035k", "100035"), ("1.01E", "1010P"), ("1000M", "1G"), ("0.1m", "100u"),
    ("0.0000000001", "1n"), ("4123456n", "4123456n"), ("5000000n", "5m"), ("1e3", "1e3"),
    ("1E3", "1e3"), ("1.2e3", "1200"), ("1.3E+6", "1300e3"), ("100Mi", "100Mi"), ("1024Mi", "1Gi"),
    ("1048576Ki", "1Gi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"), (".001Ki", "1024m"),
    ("0.1n", "1n"), ("3.001n", "4n"), ("0.00000012345", "124n"), ("5.", "5"), ("-1.5", "-1500m"),
    ("0", "0"), ("-0", "0"), ("+2k", "2k"), ("-3.001n", "-4n"),
]


@pytest.mark.parametrize(("text", "canonical"), [pytest.param(t, c, id=f"{t} -> {c}") for t, c in CANONICAL])
def test_parse_then_print_is_canonical(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical
    # Canonical text parses back to the same value.
    assert Quantity.parse(canonical).value == Quantity.parse(text).value


@pytest.mark.parametrize("text", ["K", "KiB", " 1", "1 ", "1e", "", ".", "1.2.3", "1Ki2", "e3", "--1", "0x10",
                                  "\u0661", "1e\u0663", "\uff11"])  # non-ASCII digits: apimachinery refuses them
def test_invalid_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


@pytest.mark.parametrize(("text", "milli"), [("1", 1000), ("1.5", 1500), ("0.1n", 1), ("1Ki", 1024000),
                                             ("-1.0005", -1000), ("100m", 100)])
def test_milli_value_rounds_up_like_client_go(text: str, milli: int) -> None:
    assert Quantity.parse(text).milli_value() == milli


@pytest.mark.parametrize(
    ("value", "text"),
    [pytest.param(v, t, id=f"{v!r}") for v, t in [
        (0.5, "500m"), (1.0, "1"), (1.5, "1500m"), (0.016, "16m"), (20.5, "20500m"), (10.0, "10"),
        (1000.0, "1k"), (1500.0, "1500"), (2e6, "2M"), (1.001, "1"), (0.0004, "0"),
        (float("nan"), "0"), (-2.5, "-2500m"), (7, "7"), (Decimal("0.0015"), "1500u"),
    ]],
)
def test_metric_values_follow_prometheus_adapter_conversion(value: float, text: str) -> None:
    assert format_decimal(value) == text


def test_infinities_are_clamped_not_garbage() -> None:
    assert Quantity.from_float(float("inf")).milli_value() == 2**63 - 1
    assert Quantity.from_float(float("-inf")).milli_value() == -(2**63 - 1)


INT64_MAX = 2**63 - 1
# The largest float whose ×1000 (as a float) stays below 2^63, and the next float up, whose ×1000
# rounds to exactly 2^63: the two sides of the clamp.
LARGEST_UNCLAMPED = 9223372036854774.0
SMALLEST_CLAMPED = 9223372036854776.0


def test_clamp_boundary_floats_are_adjacent() -> None:
    # Preconditions of the boundary cases below: no float lies between them, and they straddle 2^63.
    assert math.nextafter(LARGEST_UNCLAMPED, math.inf) == SMALLEST_CLAMPED
    assert LARGEST_UNCLAMPED * 1000.0 < 2**63 <= SMALLEST_CLAMPED * 1000.0


@pytest.mark.parametrize(("value", "milli"), [
    pytest.param(1.5, 1500, id="1.5 -> 1500"),
    pytest.param(-1.5, -1500, id="-1.5 -> -1500"),
    pytest.param(0.0009, 0, id="positive sub-milli truncates to 0"),
    pytest.param(-0.0009, 0, id="negative sub-milli truncates toward zero, not -1"),
    pytest.param(-2.0009, -2000, id="negative truncates toward zero, not floor"),
    pytest.param(0.0, 0, id="zero"),
    pytest.param(-0.0, 0, id="negative zero"),
    pytest.param(math.nan, 0, id="NaN -> 0"),
    pytest.param(-math.nan, 0, id="negative NaN -> 0"),
    pytest.param(math.inf, INT64_MAX, id="+Inf clamps to int64 max"),
    pytest.param(-math.inf, -INT64_MAX, id="-Inf clamps to -(int64 max)"),
    pytest.param(9.3e15, INT64_MAX, id="9.3e15 x1000 beyond int64 clamps"),
    pytest.param(-9.3e15, -INT64_MAX, id="-9.3e15 x1000 beyond int64 clamps"),
    pytest.param(1e300, INT64_MAX, id="huge finite clamps"),
    pytest.param(SMALLEST_CLAMPED, INT64_MAX, id="x1000 rounds to exactly 2^63: clamped"),
    pytest.param(-SMALLEST_CLAMPED, -INT64_MAX, id="x1000 rounds to exactly -2^63: clamped"),
    pytest.param(LARGEST_UNCLAMPED, 9223372036854773760, id="largest float below 2^63/1000 not clamped"),
    pytest.param(-LARGEST_UNCLAMPED, -9223372036854773760, id="its negative not clamped"),
])
def test_milli_from_float_truncates_and_clamps_like_prometheus_adapter(value: float, milli: int) -> None:
    result = milli_from_float(value)
    assert (type(result), result) == (int, milli)
    assert -INT64_MAX <= result <= INT64_MAX  # always fits a Go int64 (and its negation)


@pytest.mark.parametrize(("num_bytes", "text"), [(14499840, "14160Ki"), (1000, "1k"), (1500, "1500"),
                                                 (1025, "1025"), (2048, "2Ki"), (1048576, "1Mi"),
                                                 (3100, "3100"), (0, "0"), (-5, "0")])
def test_memory_is_binary_si(num_bytes: int, text: str) -> None:
    assert format_bytes(num_bytes) == text


@pytest.mark.parametrize(("cores", "text"), [(0.004123456, "4123456n"), (0.005, "5m"), (2.0, "2"),
                                             (0.0, "0"), (-1.0, "0"), (float("nan"), "0")])
def test_cpu_is_nano_cores(cores: float, text: str) -> None:
    assert format_cpu_cores(cores) == text


def test_binary_below_one_switches_to_decimal() -> None:
    assert Quantity.of(Decimal("0.5"), Format.BINARY_SI).format is Format.DECIMAL_SI


@pytest.mark.parametrize(("milli", "text"), [
    pytest.param(0, "0", id="zero"),
    pytest.param(1, "1m", id="one milli"),
    pytest.param(1500, "1500m", id="fraction stays milli"),
    pytest.param(1000, "1", id="whole unit"),
    pytest.param(10, "10m", id="tens stay below a step"),
    pytest.param(1_500_000, "1500", id="whole but not a thousand"),
    pytest.param(2_000_000, "2k", id="kilo"),
    pytest.param(-2500, "-2500m", id="negative"),
    pytest.param(10**21, "1e18", id="beyond int64 milli: exponent form, not clamped"),
    pytest.param(10**25, "10e21", id="far beyond int64 milli: exponent form"),
    pytest.param(-(10**25) * 15, "-150e21", id="negative beyond int64 milli"),
    pytest.param(2**63, "9223372036854775808e-3", id="2^63 milli exactly"),
    pytest.param(2**63 - 1, "9223372036854775807m", id="int64 max"),
    pytest.param(10**18, "1P", id="within int64 milli: DecimalSI"),
])
def test_format_milli_is_canonical_decimal_si(milli: int, text: str) -> None:
    # Fixed strings: format_milli shares its stepping with Quantity, so comparing the two alone
    # could not catch a fault in that shared code.
    assert format_milli(milli) == text
    assert str(Quantity.from_milli(milli)) == text


@pytest.mark.parametrize("text", ["1e999999", "1e2147483648", "1e400", "9223372036854775808m", "1e900000", "-1e17"])
def test_a_milli_value_beyond_int64_is_refused_not_wrapped(text: str) -> None:
    """Every reader of quantities (metrics answers, autoscaler targets, pod requests) gets a
    QuantityError for a value whose milli-value int64 cannot hold, and cheaply for a huge exponent."""
    with pytest.raises(QuantityOutOfRange):
        Quantity.parse(text).milli_value()


def test_the_int64_edges_still_read() -> None:
    assert Quantity.parse("9223372036854775807m").milli_value() == 2**63 - 1
    assert Quantity.parse("-9223372036854775808m").milli_value() == -(2**63)
