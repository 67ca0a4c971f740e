"""kubecommon.kubetime: `metav1.Time`/`MicroTime` text read as Go's RFC 3339 parser reads it and
written as the API server stores it, so a timestamp means the same moment on both sides."""

from datetime import datetime, timezone

import pytest

from kubecommon.kubetime import TimeError, format_micro_time, format_time, parse_time, parse_time_ns

MOMENT = 1795629600  # 2026-11-25T18:00:00Z
ZERO_TIME = -62135596800  # Go's time.Time{}: 0001-01-01T00:00:00Z


@pytest.mark.parametrize(("text", "nanos"), [
    pytest.param("2026-11-25T18:00:00Z", MOMENT * 10**9, id="utc"),
    pytest.param("2026-11-25T19:00:00+01:00", MOMENT * 10**9, id="east offset"),
    pytest.param("2026-11-25T12:30:00-05:30", MOMENT * 10**9, id="west offset with minutes"),
    pytest.param("2026-11-25T18:00:00.5Z", MOMENT * 10**9 + 500_000_000, id="fraction"),
    pytest.param("2026-11-25T18:00:00.123456Z", MOMENT * 10**9 + 123_456_000, id="MicroTime"),
    pytest.param("2026-11-25T18:00:00.123456789Z", MOMENT * 10**9 + 123_456_789, id="RFC3339Nano"),
    pytest.param("2026-11-25T18:00:00.1234567891Z", MOMENT * 10**9 + 123_456_789, id="beyond ns dropped"),
    pytest.param("2026-11-25T18:00:00,5Z", MOMENT * 10**9 + 500_000_000, id="comma fraction as Go"),
    pytest.param("1970-01-01T00:00:00Z", 0, id="epoch"),
    pytest.param("0001-01-01T00:00:00Z", ZERO_TIME * 10**9, id="Go's zero time"),
    pytest.param("0000-01-01T00:00:00Z", (ZERO_TIME - 366 * 86400) * 10**9, id="year zero"),
    pytest.param("2024-02-29T00:00:00Z", 1709164800 * 10**9, id="leap day"),
    pytest.param("1969-12-31T23:59:59.5Z", -500_000_000, id="before the epoch"),
    pytest.param("9999-12-31T23:59:59Z", 253402300799 * 10**9, id="last second"),
])
def test_rfc3339_reads_as_go(text: str, nanos: int) -> None:
    assert parse_time_ns(text) == nanos
    assert parse_time(text) == pytest.approx(nanos / 10**9, abs=1e-6)


@pytest.mark.parametrize(("text", "why"), [
    pytest.param("", "is not RFC 3339", id="empty"),
    pytest.param("now", "is not RFC 3339", id="word"),
    pytest.param("2026-11-25", "is not RFC 3339", id="date only"),
    pytest.param("2026-11-25T18:00:00", "is not RFC 3339", id="no zone"),
    pytest.param("2026-11-25T18:00Z", "is not RFC 3339", id="no seconds"),
    pytest.param("2026-11-25 18:00:00Z", "is not RFC 3339", id="space for T"),
    pytest.param("2026-11-25t18:00:00Z", "is not RFC 3339", id="lower-case t"),
    pytest.param("2026-11-25T18:00:00z", "is not RFC 3339", id="lower-case z"),
    pytest.param("2026-11-25T18:00:00+0100", "is not RFC 3339", id="offset without colon"),
    pytest.param("2026-11-25T18:00:00+01", "is not RFC 3339", id="offset hours only"),
    pytest.param("20261125T180000Z", "is not RFC 3339", id="basic ISO 8601"),
    pytest.param("2026-11-25T18:00:00.Z", "is not RFC 3339", id="point without digits"),
    pytest.param(" 2026-11-25T18:00:00Z", "is not RFC 3339", id="leading space"),
    pytest.param("2026-11-25T18:00:00Z ", "is not RFC 3339", id="trailing space"),
    pytest.param("2026-13-01T00:00:00Z", "month out of range", id="month 13"),
    pytest.param("2026-02-29T00:00:00Z", "day out of range", id="not a leap year"),
    pytest.param("2026-04-31T00:00:00Z", "day out of range", id="April 31"),
    pytest.param("2026-11-25T24:00:00Z", "hour out of range", id="hour 24"),
    pytest.param("2026-11-25T18:60:00Z", "minute out of range", id="minute 60"),
    pytest.param("2026-11-25T18:00:60Z", "second out of range", id="leap second"),
    pytest.param("2026-11-25T18:00:00+24:00", "time zone offset out of range", id="offset 24h"),
    pytest.param("\u0662026-11-25T18:00:00Z", "is not RFC 3339", id="non-ASCII digit"),
])
def test_what_go_refuses_is_refused(text: str, why: str) -> None:
    with pytest.raises(TimeError, match=why):
        parse_time(text)


@pytest.mark.parametrize("value", [None, 1795629600, b"2026-11-25T18:00:00Z"], ids=repr)
def test_only_text_is_a_time(value: object) -> None:
    with pytest.raises(TimeError, match="not a string"):
        parse_time(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("epoch", "text"), [
    pytest.param(float(MOMENT), "2026-11-25T18:00:00Z", id="whole second"),
    pytest.param(MOMENT + 0.999, "2026-11-25T18:00:00Z", id="fraction truncated"),
    pytest.param(0.0, "1970-01-01T00:00:00Z", id="epoch"),
    pytest.param(-0.5, "1969-12-31T23:59:59Z", id="before the epoch truncates down"),
    pytest.param(float(ZERO_TIME), "0001-01-01T00:00:00Z", id="Go's zero time"),
    pytest.param(1709164800.0, "2024-02-29T00:00:00Z", id="leap day"),
    pytest.param(253402300799.0, "9999-12-31T23:59:59Z", id="last second"),
])
def test_time_writes_as_metav1(epoch: float, text: str) -> None:
    assert format_time(epoch) == text
    assert parse_time(text) == pytest.approx(float(int(epoch // 1)))


@pytest.mark.parametrize(("epoch", "text"), [
    pytest.param(MOMENT + 0.123456, "2026-11-25T18:00:00.123456Z", id="microseconds"),
    pytest.param(float(MOMENT), "2026-11-25T18:00:00.000000Z", id="six zeros"),
    pytest.param(-0.5, "1969-12-31T23:59:59.500000Z", id="before the epoch"),
])
def test_micro_time_writes_six_digits(epoch: float, text: str) -> None:
    assert format_micro_time(epoch) == text


@pytest.mark.parametrize("epoch", [float("nan"), float("inf"), 253402300800.0, float(ZERO_TIME - 400 * 86400 * 366)],
                         ids=["nan", "inf", "year 10000", "year below 0"])
def test_a_time_without_rfc3339_spelling_is_an_error(epoch: float) -> None:
    with pytest.raises(TimeError):
        format_time(epoch)


@pytest.mark.parametrize("step", [63_072_017, 79_999_993, 86_400 * 366 * 4 + 3_601], ids=str)
def test_calendar_agrees_with_datetime(step: int) -> None:
    """The integer calendar against Python's across the years the product will see and beyond."""
    for epoch in range(ZERO_TIME, 253402300799, step):
        expected = datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert format_time(float(epoch)) == expected.rjust(20, "0")
        assert parse_time_ns(expected.rjust(20, "0")) == epoch * 10**9
