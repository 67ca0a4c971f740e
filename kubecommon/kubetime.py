"""Kubernetes timestamps (`metav1.Time`, `metav1.MicroTime`) <-> float seconds since the Unix epoch.

Reading is Go's `time.Parse(time.RFC3339, text)`, which both types' JSON decoding uses:
`2006-01-02T15:04:05` then an optional fraction of any length (`.5`, `.123456789`; Go also takes
a comma) then `Z` or a `+hh:mm`/`-hh:mm` offset. Upper-case `T` and `Z` only, no space, no missing
seconds, no offset without its colon, every field in range (no `24:00:00`, no Feb 30, no leap
second); years 0000-9999. Fractions beyond the nanosecond are dropped, as in Go.

Writing is what the API server stores: `format_time` is `metav1.Time` (RFC 3339 in UTC, whole
seconds, the fraction truncated: `2026-01-02T03:04:05Z`); `format_micro_time` is
`metav1.MicroTime` (exactly six fractional digits). Go's zero time (`0001-01-01T00:00:00Z`)
round-trips like any other.

The calendar arithmetic is done on integers here (days from 1970-01-01), so year 0000 and the zero
time need no special case and formatting a timestamp costs a few integer divisions.

Errors are `TimeError` (a ValueError) quoting the text and saying what is wrong; callers put the
field in front. Non-goals: reading the clock (callers pass epoch seconds), `null`/absent values
(each caller decides what a missing time means), local time zones. Pure: no I/O.
"""

from __future__ import annotations

import math
import re

__all__ = ["TimeError", "format_micro_time", "format_time", "parse_time", "parse_time_ns"]

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))", re.ASCII)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_SECONDS_PER_DAY = 86_400
_NANOS = 1_000_000_000
_EXAMPLE = "e.g. 2026-01-02T03:04:05Z"


class TimeError(ValueError):
    """Text that is not RFC 3339 as Go reads it, or a time outside years 0000-9999."""


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The inverse of `_days_from_civil`: (year, month, day)."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1_460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _out_of_range(year: int, month: int, day: int, clock: tuple[int, int, int]) -> str | None:
    hour, minute, second = clock
    if not 1 <= month <= 12:
        return "month"
    if not 1 <= day <= _DAYS_IN_MONTH[month - 1] + (month == 2 and _is_leap(year)):
        return "day"
    if hour > 23:
        return "hour"
    if minute > 59:
        return "minute"
    if second > 59:
        return "second"
    return None


def parse_time_ns(text: str) -> int:
    """Go's `time.Parse(time.RFC3339, text)` as whole nanoseconds since the epoch, or TimeError."""
    if not isinstance(text, str):
        raise TimeError(f"{text!r} is not RFC 3339 ({_EXAMPLE}): not a string")
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise TimeError(f"{text!r} is not RFC 3339 ({_EXAMPLE})")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    wrong = _out_of_range(year, month, day, (hour, minute, second))
    if wrong is None and match.group(9) and (int(match.group(10)) > 23 or int(match.group(11)) > 59):
        wrong = "time zone offset"
    if wrong is not None:
        raise TimeError(f"{text!r} is not RFC 3339: {wrong} out of range")
    seconds = _days_from_civil(year, month, day) * _SECONDS_PER_DAY + hour * 3_600 + minute * 60 + second
    if match.group(9):
        offset = int(match.group(10)) * 3_600 + int(match.group(11)) * 60
        seconds -= offset if match.group(9) == "+" else -offset
    fraction = match.group(7) or "0"
    return seconds * _NANOS + int(fraction[:9].ljust(9, "0"))


def parse_time(text: str) -> float:
    """Go's `time.Parse(time.RFC3339, text)` as float epoch seconds (`...T00:00:01.5Z` -> x.5)."""
    nanos = parse_time_ns(text)
    whole, fraction = divmod(nanos, _NANOS)
    return whole + fraction / _NANOS


def _date_and_clock(whole_seconds: int) -> str:
    days, second_of_day = divmod(whole_seconds, _SECONDS_PER_DAY)
    year, month, day = _civil_from_days(days)
    if not 0 <= year <= 9999:
        raise TimeError(f"time {whole_seconds} s after the epoch is outside years 0000-9999")
    hour, rest = divmod(second_of_day, 3_600)
    minute, second = divmod(rest, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"


def format_time(epoch_seconds: float) -> str:
    """`metav1.Time` as JSON holds it: RFC 3339 in UTC, whole seconds (the fraction truncated)."""
    if not math.isfinite(epoch_seconds):
        raise TimeError(f"time {epoch_seconds!r} is not finite")
    return _date_and_clock(math.floor(epoch_seconds)) + "Z"


def format_micro_time(epoch_seconds: float) -> str:
    """`metav1.MicroTime`: RFC 3339 in UTC with exactly six fractional digits.

    The float is read to the nearest microsecond (a float epoch holds nothing finer)."""
    if not math.isfinite(epoch_seconds):
        raise TimeError(f"time {epoch_seconds!r} is not finite")
    whole, micros = divmod(round(epoch_seconds * 1_000_000), 1_000_000)
    return f"{_date_and_clock(whole)}.{micros:06d}Z"
