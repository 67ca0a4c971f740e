"""Times and windows in the metrics APIs' own spellings: what the rules (kubecommon.gotime and
kubecommon.kubetime, tested there) refuse is reported with the value, for the field path in front."""

import pytest

from controller.metrics.wire import parse_duration, parse_time


@pytest.mark.parametrize(("text", "seconds"), [("1m0s", 60.0), ("500ms", 0.5), ("0", 0.0)], ids=repr)
def test_windows_are_go_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "1x", "m", "1m 0s", "1.2.3s", "1d", 30], ids=repr)
def test_bad_durations(text):
    with pytest.raises(ValueError, match=f"^not a duration: {text!r}$".replace(".", r"\.")):
        parse_duration(text)


def test_times_are_rfc3339():
    assert parse_time("2026-11-25T19:00:00.5+01:00") == 1795629600.5


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("2026-11-25", "not an RFC 3339 time: '2026-11-25'", id="date only"),
    pytest.param("2026-11-25T18:00:00", "RFC 3339 time without a zone: '2026-11-25T18:00:00'", id="no zone"),
    pytest.param("2026-11-25T18:00:00.5", "RFC 3339 time without a zone", id="no zone after a fraction"),
    pytest.param("2026-11-25 18:00:00Z", "not an RFC 3339 time", id="space for T"),
    pytest.param("now", "not an RFC 3339 time: 'now'", id="word"),
    pytest.param(None, "not an RFC 3339 time: None", id="null"),
])
def test_bad_times(text, message):
    with pytest.raises(ValueError, match=message):
        parse_time(text)
