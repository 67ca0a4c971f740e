"""Times and windows in the metrics APIs' own spellings become the seconds the algorithm compares."""

import pytest

from controller.metrics.wire import parse_duration, parse_time


@pytest.mark.parametrize(("text", "seconds"), [
    ("1m0s", 60.0), ("30s", 30.0), ("1.5s", 1.5), ("500ms", 0.5), ("1h2m3s", 3723.0), ("0", 0.0),
    ("250us", 0.00025), ("-2s", -2.0),
], ids=lambda v: str(v))
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "1x", "m", "1m 0s", "1.2.3s", 30], ids=repr)
def test_bad_durations(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(("text", "epoch"), [
    ("2026-11-25T18:00:00Z", 1795629600.0),
    ("2026-11-25T18:00:00.123456789Z", 1795629600.123456),
    ("2026-11-25T19:00:00+01:00", 1795629600.0),
], ids=["utc", "nanoseconds", "offset"])
def test_rfc3339_times(text, epoch):
    assert parse_time(text) == pytest.approx(epoch)


@pytest.mark.parametrize("text", ["2026-11-25", "2026-11-25T18:00:00", "now", None], ids=repr)
def test_bad_times(text):
    with pytest.raises(ValueError, match="RFC 3339"):
        parse_time(text)
