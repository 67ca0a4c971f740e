"""Kubernetes resource quantities: parsing and the canonical string form.

Clients (the HPA, kubectl) compare what we send with `MilliValue()`, and humans compare the strings
with what metrics-server and prometheus-adapter print, so both the exact value and the exact
canonical spelling matter. The rules follow k8s.io/apimachinery `resource.Quantity`: exact decimal
arithmetic, values below 1n rounded up in magnitude, the suffix of the input deciding the output
format (BinarySI, DecimalSI or DecimalExponent).

Pure: no I/O. Floats enter only through `from_float`/`format_*`, which apply prometheus-adapter's
milli-truncation so a value never differs from what the upstream adapter would have served.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, Context, Decimal, localcontext
from enum import StrEnum

__all__ = [
    "Format",
    "Quantity",
    "QuantityError",
    "QuantityOutOfRange",
    "format_bytes",
    "format_cpu_cores",
    "format_decimal",
    "format_milli",
    "milli_from_float",
    "milli_of_finite",
]


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class QuantityOutOfRange(QuantityError):
    """A well-formed quantity beyond what decimal arithmetic or an int64 milli-value holds."""


class Format(StrEnum):
    """How a quantity prints; fixed by the suffix it was parsed from."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_NUMBER = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)", re.DOTALL | re.ASCII)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)", re.ASCII)
_NANO = Decimal("1e-9")
_INT64_MAX = 2**63 - 1
_MAX_INT64 = Decimal(_INT64_MAX)
_MAX_MILLI_DIGITS = 16  # a value of 10^17 or more has a milli-value beyond int64
_INT64_LIMIT = float(2**63)
# Enough significant digits that no parse or scale ever rounds (largest: 2^60 × many digits).
_PRECISION = 120
_EXACT = Context(prec=_PRECISION)  # read-only; passed to single operations that must not round


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity and the format it prints in."""

    value: Decimal
    format: Format = Format.DECIMAL_SI

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse `text` as kube-apiserver would, or raise QuantityError."""
        match = _NUMBER.fullmatch(text)
        if match is None:
            raise QuantityError("quantities must match the regular expression "
                                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}")
        sign, digits, suffix = match.groups()
        with localcontext() as ctx:
            ctx.prec = _PRECISION
            try:
                return cls._from_parts(sign, digits, suffix, text)
            except ArithmeticError:  # an exponent beyond what decimal arithmetic holds (1e999999)
                raise QuantityOutOfRange(f"quantity out of range: {text!r}") from None

    @classmethod
    def _from_parts(cls, sign: str, digits: str, suffix: str, text: str) -> Quantity:
        number = Decimal(digits if not digits.endswith(".") else digits[:-1])
        if suffix in _BINARY_SUFFIXES:
            value, fmt = number * (2 ** _BINARY_SUFFIXES[suffix]), Format.BINARY_SI
        elif suffix in _DECIMAL_SUFFIXES:
            value, fmt = number.scaleb(_DECIMAL_SUFFIXES[suffix]), Format.DECIMAL_SI
        elif (exp := _EXPONENT.fullmatch(suffix)) is not None:
            value, fmt = number.scaleb(int(exp.group(1))), Format.DECIMAL_EXPONENT
        else:
            raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
        if sign == "-":
            value = -value
        return cls.of(value, fmt)

    @classmethod
    def of(cls, value: Decimal | int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """Build a quantity, applying the 1n rounding and BinarySI rules of apimachinery."""
        with localcontext() as ctx:
            ctx.prec = _PRECISION
            value = _round_up_to_nano(Decimal(value))
        if fmt is Format.BINARY_SI:
            if abs(value) < 1:
                fmt = Format.DECIMAL_SI
            elif value > _MAX_INT64:
                value = _MAX_INT64
        return cls(value=value, format=fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """The quantity `NewMilliQuantity(milli, fmt)` creates upstream."""
        if fmt is Format.DECIMAL_SI:
            # Hot path (every metric value): exact, coarser than 1n, no cap; nothing for `of` to do.
            # Beyond int64 milli-units (no `MilliValue()`), the exponent form (`format_milli`).
            if not -_INT64_MAX <= milli <= _INT64_MAX:
                fmt = Format.DECIMAL_EXPONENT
            return cls(value=Decimal(milli).scaleb(-3, _EXACT), format=fmt)
        return cls.of(Decimal(milli).scaleb(-3), fmt)

    @classmethod
    def from_float(cls, value: float, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """prometheus-adapter's conversion: `int64(v*1000)` milli, truncated toward zero; NaN → 0.

        ±Inf is clamped to the int64 range instead of Go's undefined conversion.
        """
        return cls.from_milli(milli_from_float(value), fmt)

    def milli_value(self) -> int:
        """What client-go's `MilliValue()` returns: ceil(value × 1000); QuantityError where that
        does not fit in int64 (upstream's wraps). The size is checked before the integer is
        built, so a huge exponent (1e900000) costs nothing."""
        if self.value and self.value.adjusted() > _MAX_MILLI_DIGITS:
            raise QuantityOutOfRange("quantity out of range: its milli-value does not fit in int64")
        with localcontext() as ctx:
            ctx.prec = _PRECISION
            milli = int((self.value * 1000).to_integral_value(rounding=ROUND_CEILING))
        if not -_MAX_INT64 - 1 <= milli <= _MAX_INT64:
            raise QuantityOutOfRange("quantity out of range: its milli-value does not fit in int64")
        return milli

    def as_float(self) -> float:
        return float(self.value)

    def __str__(self) -> str:
        return _canonical(self.value, self.format)


def milli_from_float(value: float) -> int:
    """prometheus-adapter's `int64(v*1000)`: milli-units truncated toward zero; NaN → 0, ±Inf and
    out-of-range values clamped to ±(2^63-1) instead of Go's undefined conversion."""
    scaled = value * 1000.0
    if -_INT64_LIMIT < scaled < _INT64_LIMIT:  # the common case; False for NaN and ±Inf
        return int(scaled)
    if math.isnan(scaled):
        return 0
    return _INT64_MAX if scaled > 0 else -_INT64_MAX


def milli_of_finite(value: float) -> int:
    """Milli-units of a finite `value`, truncated toward zero, never clamped: `milli_from_float`
    (upstream's `int64(v*1000)`) inside int64, and beyond it the exact milli-units of the value's
    shortest decimal form (what Prometheus printed), which `format_milli` writes in exponent form.
    ValueError for NaN and ±Inf."""
    scaled = value * 1000.0
    if -_INT64_LIMIT < scaled < _INT64_LIMIT:
        return int(scaled)
    if math.isnan(scaled) or math.isinf(value):
        raise ValueError(f"no quantity holds {value!r}")
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        return int(Decimal(repr(value)).scaleb(3).to_integral_value(rounding=ROUND_DOWN))


def format_milli(milli: int) -> str:
    """`str(Quantity.from_milli(milli))` with integer arithmetic only: the canonical DecimalSI text
    of milli/1000, for hot paths that format thousands of metric values per answer.

    The steps repeat `_canonical`'s on purpose: calling a shared helper costs ~20% here. Tests pin
    both to the same literal strings (tests/unit/kubecommon/test_quantity.py)."""
    if not -_INT64_MAX <= milli <= _INT64_MAX:
        # No int64 milli-value: the exponent form, as a `resource.Quantity` of that size in
        # DecimalExponent prints it: 2e16 units -> `20e15` (a float that large is an integer).
        return _canonical(Decimal(milli).scaleb(-3, _EXACT), Format.DECIMAL_EXPONENT)
    if milli % 1000:
        return f"{milli}m"  # a fraction of a unit always prints in milli-units: the common case
    if milli == 0:
        return "0"
    sign = ""
    if milli < 0:
        sign, milli = "-", -milli
    exponent = -3
    while milli % 10 == 0:
        milli //= 10
        exponent += 1
    shift = exponent % 3  # down to the next multiple of 3, as DecimalSI suffixes step
    if shift:
        milli, exponent = milli * 10**shift, exponent - shift
    if exponent > 18:
        milli, exponent = milli * 10 ** (exponent - 18), 18
    return f"{sign}{milli}{_DECIMAL_SUFFIX_BY_EXPONENT[exponent]}"


def format_decimal(value: float | int | Decimal) -> str:
    """Canonical DecimalSI text for a metric value (custom and external metrics)."""
    if isinstance(value, float):
        return str(Quantity.from_float(value))
    return str(Quantity.of(Decimal(value)))


def format_cpu_cores(cores: float) -> str:
    """CPU usage in cores as metrics-server prints it: nano-core DecimalSI, negatives and NaN as 0."""
    if math.isnan(cores) or cores <= 0:
        return "0"
    nanos = Decimal(repr(cores)).scaleb(9).to_integral_value(rounding=ROUND_DOWN)
    return str(Quantity.of(nanos.scaleb(-9)))


def format_bytes(num_bytes: float | int) -> str:
    """Memory in bytes as BinarySI (`14160Ki`), negatives and NaN as 0."""
    if isinstance(num_bytes, float) and (math.isnan(num_bytes) or math.isinf(num_bytes)):
        return "0"
    if num_bytes <= 0:
        return "0"
    return str(Quantity.of(Decimal(int(num_bytes)), Format.BINARY_SI))


def _round_up_to_nano(value: Decimal) -> Decimal:
    """Values finer than 1n round up in magnitude, like `inf.Dec` rounding in apimachinery."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or exponent >= -9:
        return value
    rounding = ROUND_CEILING if value > 0 else ROUND_FLOOR
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        return value.quantize(_NANO, rounding=rounding)


def _mantissa_exponent(value: Decimal) -> tuple[int, int]:
    """Write a positive value as m·10^e with integer m not divisible by 10."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    mantissa = int(value.scaleb(-exponent, _EXACT))  # the coefficient, exactly
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    return mantissa, exponent


def _canonical(value: Decimal, fmt: Format) -> str:
    if value == 0:
        return "0"
    if value < 0:
        return "-" + _canonical(-value, fmt)
    if fmt is Format.BINARY_SI and value >= 1024 and value == value.to_integral_value():
        mantissa, power = int(value), 0
        while mantissa % 1024 == 0 and power < len(_BINARY_SUFFIX_BY_POWER) - 1:
            mantissa //= 1024
            power += 1
        return f"{mantissa}{_BINARY_SUFFIX_BY_POWER[power]}"
    mantissa, exponent = _mantissa_exponent(value)
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if fmt is Format.DECIMAL_EXPONENT:
        return str(mantissa) if exponent == 0 else f"{mantissa}e{exponent}"
    if exponent > 18:
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXPONENT[exponent]}"
