"""A metric's live history: a read appended after the kept samples, trimmed to the lookback."""

from __future__ import annotations

import math
from array import array

import numpy as np
import pytest

from controller.forecast import History
from controller.history import window
from controller.history.fold import Grid, MetricHistory

NAN = math.nan


def _h(start: float, *values: float) -> History:
    return History(start=start, step=60.0, values=np.array(values, dtype=np.float32))


def _list(h: History) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in h.values]


def test_a_fold_becomes_float32_with_nan_where_nothing_answered() -> None:
    folded = MetricHistory(total=array("d", [1000.0, 0.0, 2500.0]), present=b"\x01\x00\x01", pods=array("H", [1, 0, 1]))
    h = window.from_fold(folded, Grid(start=600.0, step=60.0, count=3))
    assert (h.start, h.step, h.values.dtype.name, _list(h)) == (600.0, 60.0, "float32", [1000.0, None, 2500.0])


@pytest.mark.parametrize(("old", "new", "keep", "start", "values"), [
    pytest.param(_h(0.0), _h(120.0, 1, 2), 10, 120.0, [1, 2], id="nothing held: the read is the history"),
    pytest.param(_h(0.0, 1, 2, 3), _h(180.0, 4, 5), 10, 0.0, [1, 2, 3, 4, 5], id="appended right after"),
    pytest.param(_h(0.0, 1, 2, 3), _h(60.0, 7, NAN, 8), 10, 0.0, [1, 7, 3, 8],
                 id="overlap: the newer read wins, a tick it has no value for keeps the older"),
    pytest.param(_h(0.0, 1, 2), _h(240.0, 5), 10, 0.0, [1, 2, None, None, 5], id="a gap between reads is NaN"),
    pytest.param(_h(0.0, 1, 2, 3), _h(180.0, 4, 5), 3, 120.0, [3, 4, 5], id="trimmed to the last keep ticks"),
    pytest.param(_h(600.0, 1, 2), _h(0.0, 9, 9, 9), 10, 0.0, [9, 9, 9], id="a read from before the held start replaces it"),
    pytest.param(_h(0.0, 1, 2), _h(6000.0, 5, 6), 3, 6000.0 - 60.0, [None, 5, 6],
                 id="a read long after (an outage longer than the lookback): only the lookback is kept"),
])
def test_merge(old: History, new: History, keep: int, start: float, values: list[float]) -> None:
    merged = window.merge(window.pack(old), new, keep=keep)
    assert merged.values.dtype == np.float16  # 2 bytes a tick
    h = window.unpack(merged)
    assert (h.start, _list(h)) == (start, [None if v is None or math.isnan(v) else v for v in values])
    assert h.values.dtype == np.float32


def test_merge_never_writes_an_array_already_handed_out() -> None:
    old = window.pack(_h(0.0, 1, 2, 3))
    before = old.values.copy()
    handed_out = window.unpack(old)
    window.merge(old, _h(120.0, 9, 9), keep=3)
    assert np.array_equal(old.values, before) and _list(handed_out) == [1, 2, 3]


@pytest.mark.parametrize("peak", [pytest.param(3.0, id="cores"), pytest.param(4.0e12, id="bytes in milli-units"),
                                  pytest.param(1.0e-3, id="a small rate")])  # fmt: skip
def test_packed_samples_keep_eleven_significant_bits_at_any_magnitude(peak: float) -> None:
    rng = np.random.default_rng(7)
    values = (peak * rng.uniform(0.001, 1.0, 20_160)).astype(np.float32)
    values[100] = np.nan
    h = window.unpack(window.merge(window.empty(60.0), History(start=0.0, step=60.0, values=values), keep=20_160))
    assert np.isnan(h.values[100])
    ok = ~np.isnan(values)
    assert np.max(np.abs(h.values[ok] - values[ok]) / values[ok]) <= 2.0**-11
    assert window.pack(History(start=0.0, step=60.0, values=values)).values.nbytes == 2 * 20_160
