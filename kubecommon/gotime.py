"""Go's `time.Duration` text, read and written as Go does: the one home of "30s", "1m0s", "500ms".

Kubernetes and prometheus-adapter flags (`--sync-period=15s`), `metav1.Duration` fields (the
metrics APIs' `window: 1m0s`) and client-go settings spell a length of time this way.

`parse_duration_ns` is Go's `time.ParseDuration`: an optional sign, then one or more
`<number><unit>` parts (`1h30m`, `1.5h`, `.5s`, `1.s`); units `ns`, `us`, `µs` (U+00B5), `μs`
(U+03BC), `ms`, `s`, `m`, `h`; a lone `0` needs no unit; no spaces; a fraction is truncated to the
nanosecond with Go's own float arithmetic; a total beyond int64 nanoseconds (~292 years) is an
error. `format_duration_ns` is Go's `Duration.String()`: `0s`, `500ns`, `1.5µs`, `250ms`, `1.5s`,
`1m0s`, `1h0m0s` (hours are the largest unit). The `*_ns` forms are exact; `parse_duration` and
`format_duration` speak the float seconds the product computes with.

Errors are `DurationError` (a ValueError) worded like Go's ("invalid duration", "missing unit in
duration", "unknown unit ... in duration"); callers put the flag or field in front.

Non-goals: Prometheus's `model.Duration` (`1d`, `1w`, `1y`, no fractions; the rule file's
`window`, read by `adapter.config.load`), naming the flag or field. Pure: no I/O.
"""

from __future__ import annotations

__all__ = ["DurationError", "format_duration", "format_duration_ns", "parse_duration", "parse_duration_ns"]

NANOS_PER_SECOND = 1_000_000_000
_UNIT_NANOS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
               "s": NANOS_PER_SECOND, "m": 60 * NANOS_PER_SECOND, "h": 3_600 * NANOS_PER_SECOND}
_LIMIT = 1 << 63  # |int64 nanoseconds|: the negative end; the positive end is one less
_DIGITS = frozenset("0123456789")


class DurationError(ValueError):
    """Text that Go's `time.ParseDuration` refuses; the message says which rule it broke."""


def _leading_int(text: str, start: int, whole: str) -> tuple[int, int]:
    """Go's `leadingInt`: the digits at `start` as an int and the index after them."""
    value, at = 0, start
    while at < len(text) and text[at] in _DIGITS:
        if value > _LIMIT // 10:
            raise DurationError(f"invalid duration {whole!r}")  # overflow
        value = value * 10 + ord(text[at]) - 48
        if value > _LIMIT:
            raise DurationError(f"invalid duration {whole!r}")
        at += 1
    return value, at


def _leading_fraction(text: str, start: int) -> tuple[int, float, int]:
    """Go's `leadingFraction`: digits after the point, their scale, the index after them.

    Digits beyond int64 precision are consumed and ignored, as in Go."""
    value, scale, at, overflow = 0, 1.0, start, False
    while at < len(text) and text[at] in _DIGITS:
        digit, at = ord(text[at]) - 48, at + 1
        if overflow:
            continue
        if value > (_LIMIT - 1) // 10 or value * 10 + digit > _LIMIT:
            overflow = True
            continue
        value, scale = value * 10 + digit, scale * 10
    return value, scale, at


def _part(text: str, at: int, whole: str) -> tuple[int, int]:
    """One `<number><unit>` part at `at`: its nanoseconds and the index after it."""
    if text[at] != "." and text[at] not in _DIGITS:
        raise DurationError(f"invalid duration {whole!r}")
    value, after_int = _leading_int(text, at, whole)
    fraction, scale, after = 0, 1.0, after_int
    if after < len(text) and text[after] == ".":
        fraction, scale, after = _leading_fraction(text, after + 1)
        if after == after_int + 1 and after_int == at:  # "." alone, e.g. ".s"
            raise DurationError(f"invalid duration {whole!r}")
    unit_end = after
    while unit_end < len(text) and text[unit_end] != "." and text[unit_end] not in _DIGITS:
        unit_end += 1
    if unit_end == after:
        raise DurationError(f"missing unit in duration {whole!r}")
    unit = text[after:unit_end]
    nanos_per_unit = _UNIT_NANOS.get(unit)
    if nanos_per_unit is None:
        raise DurationError(f"unknown unit {unit!r} in duration {whole!r}")
    if value > _LIMIT // nanos_per_unit:
        raise DurationError(f"invalid duration {whole!r}")
    nanos = value * nanos_per_unit
    if fraction:
        # Go computes this in float64 and truncates; the same steps give the same nanosecond.
        nanos += int(float(fraction) * (float(nanos_per_unit) / scale))
        if nanos > _LIMIT:
            raise DurationError(f"invalid duration {whole!r}")
    return nanos, unit_end


def parse_duration_ns(text: str) -> int:
    """Go's `time.ParseDuration(text)`: whole nanoseconds, or DurationError."""
    if not isinstance(text, str):
        raise DurationError(f"invalid duration {text!r}: not a string")
    negative, at = text[:1] == "-", 1 if text[:1] in ("-", "+") else 0
    if text[at:] == "0":
        return 0
    if at == len(text):
        raise DurationError(f"invalid duration {text!r}")
    total = 0
    while at < len(text):
        nanos, at = _part(text, at, text)
        total += nanos
        if total > _LIMIT:
            raise DurationError(f"invalid duration {text!r}")
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise DurationError(f"invalid duration {text!r}")
    return total


def parse_duration(text: str) -> float:
    """Go's `time.ParseDuration(text)` in float seconds (`"1m30s"` -> 90.0), or DurationError."""
    return parse_duration_ns(text) / NANOS_PER_SECOND


def _with_fraction(whole: int, part: int, digits: int) -> str:
    """Go's `fmtFrac` + `fmtInt`: `whole`, then `.part` without trailing zeros when part is not 0."""
    if not part:
        return str(whole)
    return f"{whole}.{str(part).rjust(digits, '0').rstrip('0')}"


def format_duration_ns(nanos: int) -> str:
    """Go's `Duration.String()` of `nanos` nanoseconds."""
    if nanos == 0:
        return "0s"
    sign, size = ("-", -nanos) if nanos < 0 else ("", nanos)
    if size < 1_000:
        return f"{sign}{size}ns"
    if size < 1_000_000:
        return f"{sign}{_with_fraction(size // 1_000, size % 1_000, 3)}\u00b5s"
    if size < NANOS_PER_SECOND:
        return f"{sign}{_with_fraction(size // 1_000_000, size % 1_000_000, 6)}ms"
    hours, rest = divmod(size, 3_600 * NANOS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * NANOS_PER_SECOND)
    text = _with_fraction(rest // NANOS_PER_SECOND, rest % NANOS_PER_SECOND, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def format_duration(seconds: float) -> str:
    """Go's `Duration.String()` of `seconds` rounded to the nanosecond (`90.0` -> `"1m30s"`)."""
    try:
        nanos = round(seconds * NANOS_PER_SECOND)
    except (ValueError, OverflowError):  # NaN, infinity
        raise DurationError(f"duration {seconds!r} is not finite") from None
    return format_duration_ns(nanos)
