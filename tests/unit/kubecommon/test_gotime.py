"""kubecommon.gotime: Go's `time.ParseDuration` and `Duration.String`, case for case.

The tables are Go's own (`src/time/time_test.go`: parseDurationTests, parseDurationErrorTests,
durationTests) plus the spellings Kubernetes objects and flags carry, so a flag or a
`metav1.Duration` field means here what it means to kube-controller-manager and client-go.
"""

import pytest

from kubecommon.gotime import DurationError, format_duration, format_duration_ns, parse_duration, parse_duration_ns

SECOND, MINUTE, HOUR = 10**9, 60 * 10**9, 3600 * 10**9
MAX_NS, MIN_NS = (1 << 63) - 1, -(1 << 63)


@pytest.mark.parametrize(("text", "nanos"), [
    pytest.param("0", 0, id="bare zero"),
    pytest.param("5s", 5 * SECOND, id="seconds"),
    pytest.param("1478s", 1478 * SECOND, id="many seconds"),
    pytest.param("-5s", -5 * SECOND, id="minus"),
    pytest.param("+5s", 5 * SECOND, id="plus"),
    pytest.param("-0", 0, id="minus zero"),
    pytest.param("+0", 0, id="plus zero"),
    pytest.param("5.0s", 5 * SECOND, id="decimal"),
    pytest.param("5.6s", 5 * SECOND + 600_000_000, id="fraction"),
    pytest.param("5.s", 5 * SECOND, id="point without fraction"),
    pytest.param(".5s", 500_000_000, id="fraction without integer"),
    pytest.param("1.004s", SECOND + 4_000_000, id="leading fraction zeros"),
    pytest.param("100.00100s", 100 * SECOND + 1_000_000, id="trailing fraction zeros"),
    pytest.param("10ns", 10, id="ns"),
    pytest.param("11us", 11_000, id="us"),
    pytest.param("12\u00b5s", 12_000, id="micro sign"),
    pytest.param("12\u03bcs", 12_000, id="greek mu"),
    pytest.param("13ms", 13_000_000, id="ms"),
    pytest.param("15m", 15 * MINUTE, id="m"),
    pytest.param("16h", 16 * HOUR, id="h"),
    pytest.param("3h30m", 3 * HOUR + 30 * MINUTE, id="compound"),
    pytest.param("10.5s4m", 4 * MINUTE + 10 * SECOND + 500_000_000, id="any order"),
    pytest.param("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400_000_000), id="negative compound"),
    pytest.param("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4_005_006, id="every unit"),
    pytest.param("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425_000_000, id="large hours"),
    pytest.param("52763797000ns", 52_763_797_000, id="large ns"),
    pytest.param("0.3333333333333333333h", 20 * MINUTE, id="long fraction"),
    pytest.param("9007199254740993ns", (1 << 53) + 1, id="beyond float precision"),
    pytest.param("9223372036854775807ns", MAX_NS, id="largest"),
    pytest.param("9223372036854775.807us", MAX_NS, id="largest in us"),
    pytest.param("9223372036s854ms775us807ns", MAX_NS, id="largest in parts"),
    pytest.param("-9223372036854775808ns", MIN_NS, id="smallest"),
    pytest.param("-9223372036854775.808us", MIN_NS, id="smallest in us"),
    pytest.param("-2562047h47m16.854775808s", MIN_NS, id="smallest in h"),
    pytest.param("0.100000000000000000000h", 6 * MINUTE, id="many fraction digits"),
    pytest.param("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372_539_827, id="float truncation"),
    pytest.param("1m0s", MINUTE, id="metav1.Duration window"),
    pytest.param("5m0s", 5 * MINUTE, id="kube-controller-manager default"),
])
def test_go_parses(text: str, nanos: int) -> None:
    assert parse_duration_ns(text) == nanos
    assert parse_duration(text) == pytest.approx(nanos / SECOND)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("", "invalid duration ''", id="empty"),
    pytest.param("3", "missing unit in duration '3'", id="no unit"),
    pytest.param("-", "invalid duration '-'", id="sign alone"),
    pytest.param("s", "invalid duration 's'", id="unit alone"),
    pytest.param(".", "invalid duration '.'", id="point alone"),
    pytest.param("-.", "invalid duration '-.'", id="signed point"),
    pytest.param(".s", "invalid duration '.s'", id="point and unit"),
    pytest.param("+.s", "invalid duration '+.s'", id="signed point and unit"),
    pytest.param("1d", "unknown unit 'd' in duration '1d'", id="days are Prometheus, not Go"),
    pytest.param("1sec", "unknown unit 'sec' in duration '1sec'", id="long unit name"),
    pytest.param("1M", "unknown unit 'M' in duration '1M'", id="units are case-sensitive"),
    pytest.param("1m 0s", "unknown unit 'm ' in duration '1m 0s'", id="space"),
    pytest.param(" 30s", "invalid duration ' 30s'", id="leading space"),
    pytest.param("1.2.3s", "missing unit in duration '1.2.3s'", id="two points"),
    pytest.param("--1s", "invalid duration '--1s'", id="two signs"),
    pytest.param("\u0665s", "invalid duration '\u0665s'", id="non-ASCII digit"),
    pytest.param("9223372036854775808ns", "invalid duration", id="one past the largest"),
    pytest.param("9223372036854775.808us", "invalid duration", id="one past the largest in us"),
    pytest.param("9223372036s854ms775us808ns", "invalid duration", id="one past the largest in parts"),
    pytest.param("-9223372036854775809ns", "invalid duration", id="one before the smallest"),
    pytest.param("99999999999999999999s", "invalid duration", id="integer overflow"),
    pytest.param("3000000h", "invalid duration", id="unit overflow"),
])
def test_go_refuses(text: str, message: str) -> None:
    with pytest.raises(DurationError, match=message.replace(".", r"\.").replace("+", r"\+")):
        parse_duration_ns(text)


@pytest.mark.parametrize("value", [None, 30, 1.5], ids=repr)
def test_only_text_is_a_duration(value: object) -> None:
    with pytest.raises(DurationError, match="not a string"):
        parse_duration_ns(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("nanos", "text"), [
    pytest.param(0, "0s", id="zero"),
    pytest.param(1, "1ns", id="ns"),
    pytest.param(1_100, "1.1\u00b5s", id="us with the micro sign"),
    pytest.param(2_200_000, "2.2ms", id="ms"),
    pytest.param(3_300_000_000, "3.3s", id="s"),
    pytest.param(4 * MINUTE + 5 * SECOND, "4m5s", id="m"),
    pytest.param(4 * MINUTE + 5_001_000_000, "4m5.001s", id="m with fraction"),
    pytest.param(5 * HOUR + 6 * MINUTE + 7_001_000_000, "5h6m7.001s", id="h"),
    pytest.param(8 * MINUTE + 1, "8m0.000000001s", id="nanosecond in minutes"),
    pytest.param(MAX_NS, "2562047h47m16.854775807s", id="largest"),
    pytest.param(MIN_NS, "-2562047h47m16.854775808s", id="smallest"),
    pytest.param(MINUTE, "1m0s", id="one minute"),
    pytest.param(HOUR, "1h0m0s", id="one hour"),
    pytest.param(-1_500_000, "-1.5ms", id="negative ms"),
    pytest.param(999, "999ns", id="below a microsecond"),
    pytest.param(1_000_000, "1ms", id="whole ms"),
])
def test_go_formats(nanos: int, text: str) -> None:
    assert format_duration_ns(nanos) == text
    assert parse_duration_ns(text) == nanos


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(60.0, "1m0s", id="window"), pytest.param(15.012, "15.012s", id="ms fraction"),
    pytest.param(0.5, "500ms", id="below a second"), pytest.param(0.0, "0s", id="zero"),
    pytest.param(300.0, "5m0s", id="five minutes"), pytest.param(-2.0, "-2s", id="negative"),
])
def test_seconds_format_as_go_prints_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("seconds", [float("nan"), float("inf")], ids=repr)
def test_a_non_finite_length_has_no_go_spelling(seconds: float) -> None:
    with pytest.raises(DurationError, match="not finite"):
        format_duration(seconds)
