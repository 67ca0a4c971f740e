"""The command line: times, durations, resources, and ranges too large for the step."""

from __future__ import annotations

import pytest

from controller.backtest.options import Options, OptionsError, parse_options, suggest_step, sync_count

NOW = 1_767_225_600.0
BASE = ["-f", "s.yaml", "--prometheus-url", "http://p:9090", "--rules", "r.yaml"]


def _parse(*extra: str) -> Options:
    return parse_options([*BASE, *extra], now=NOW)


@pytest.mark.parametrize(("start", "end", "expected"), [
    pytest.param("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", (NOW, NOW + 86400), id="RFC 3339"),
    pytest.param("now-7d", "now", (NOW - 7 * 86400, NOW), id="relative to now"),
    pytest.param("1767225600", "1767225900.5", (NOW, NOW + 300.5), id="unix seconds"),
])
def test_times(start: str, end: str, expected: tuple[float, float]) -> None:
    opts = _parse("--from", start, "--to", end)
    assert (opts.start, opts.end) == expected


def test_resources_and_durations_become_milli_units_and_seconds() -> None:
    opts = _parse("--from", "now-1h", "--to", "now", "--step", "30s", "--pod-requests", "cpu=500m,memory=1Gi",
                  "--node-allocatable", "cpu=4", "--flap-window", "15m")
    assert (opts.step, opts.flap_window) == (30.0, 900.0)
    assert opts.pod_requests == {"cpu": 500, "memory": 1024**3 * 1000}
    assert opts.node_allocatable == {"cpu": 4000}


@pytest.mark.parametrize(("extra", "says"), [
    pytest.param(["--from", "now", "--to", "now-1h"], "--to must be after --from", id="backwards"),
    pytest.param(["--from", "yesterday", "--to", "now"], "use RFC 3339", id="unknown time"),
    pytest.param(["--from", "now-1h", "--to", "now", "--step", "15x"], "--step", id="bad step"),
    pytest.param(["--from", "now-1h", "--to", "now", "--pod-requests", "gpu=1"], "expected cpu=", id="bad resource"),
    pytest.param(["--from", "now-1h", "--to", "now", "--explain-at", "now-2h"], "outside --from .. --to",
                 id="explain a moment not replayed"),
])
def test_bad_flags_are_explained(extra: list[str], says: str) -> None:
    with pytest.raises(OptionsError, match=None) as caught:
        _parse(*extra)
    assert says in str(caught.value)


@pytest.mark.parametrize(("days", "limit", "step"), [
    pytest.param(30, 100_000, "30s", id="a month"),
    pytest.param(365, 100_000, "10m", id="a year (5m would be 105,121 syncs)"),
    pytest.param(365, 500_000, "2m", id="a year, default limit (1m would be 525,601)"),
])
def test_a_too_large_range_gets_a_step_that_fits(days: int, limit: int, step: str) -> None:
    suggested = suggest_step(0, days * 86400, limit)
    assert suggested == step
    seconds = {"30s": 30, "2m": 120, "10m": 600}[step]
    assert sync_count(0, days * 86400, seconds) <= limit
