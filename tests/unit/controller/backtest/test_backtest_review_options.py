"""Review of the backtest's time and range flags: what a person types, what the command does with it.

Every bad value ends as one message on stderr and exit status 2, never a traceback, and never a
range the backtest cannot hold (NaN, infinity, a limit of zero syncs or of a trillion).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.backtest.cli import main
from controller.backtest.options import Options, parse_options

NOW = 1_795_000_000.0
BASE = ["-f", "s.yaml", "--prometheus-url", "http://127.0.0.1:1", "--rules", "r.yaml"]
UTC_MIDNIGHT = 1_794_960_000.0  # 2026-11-18T00:00:00Z


def _parse(*extra: str) -> Options:
    return parse_options([*BASE, *extra], now=NOW)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("2026-11-18T00:00:00Z", UTC_MIDNIGHT, id="Z"),
    pytest.param("2026-11-18t00:00:00z", UTC_MIDNIGHT, id="lower-case t and z (RFC 3339 5.6 allows them)"),
    pytest.param("2026-11-18T01:00:00+01:00", UTC_MIDNIGHT, id="an offset east of UTC"),
    pytest.param("2026-11-17T19:00:00-05:00", UTC_MIDNIGHT, id="an offset west of UTC"),
    pytest.param("2026-11-18T00:00:00.250Z", UTC_MIDNIGHT + 0.25, id="fractional seconds"),
    pytest.param("2026-11-18T00:00:00.123456789Z", UTC_MIDNIGHT + 0.123456, id="nanoseconds, as Prometheus prints"),
])
def test_rfc3339_times_with_an_offset_are_read_in_that_offset(text: str, expected: float) -> None:
    opts = _parse("--from", text, "--to", "now")
    assert opts.start == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("extra", "says"), [
    pytest.param(["--from", "2026-11-18T09:00:00", "--to", "now"], "no UTC offset",
                 id="no offset: UTC or local time? (was silently UTC)"),
    pytest.param(["--from", "2026-11-18", "--to", "now"], "no UTC offset", id="a date alone (was silently UTC)"),
    pytest.param(["--from", "nan", "--to", "now"], "not a finite time", id="NaN (was accepted, then crashed)"),
    pytest.param(["--from", "now-1h", "--to", "inf"], "not a finite time", id="infinity (was accepted, then crashed)"),
    pytest.param(["--from", "1e400", "--to", "2e400"], "not a finite time", id="a number that overflows"),
    pytest.param(["--from", "now-xyz", "--to", "now"], "--from 'now-xyz'", id="now minus garbage (was a traceback)"),
    pytest.param(["--from", "now-1h", "--to", "now", "--explain-at", "now-1q"], "--explain-at 'now-1q'",
                 id="explain-at with garbage (was a traceback)"),
    pytest.param(["--from", "now-1h", "--to", "now", "--max-syncs", "0"], "--max-syncs", id="no syncs allowed"),
    pytest.param(["--from", "now-1h", "--to", "now", "--max-syncs", "1000000000000"], "--max-syncs",
                 id="a limit that would allocate terabytes"),
    pytest.param(["--from", "now-1h", "--to", "now", "--parallel", "500"], "--parallel",
                 id="500 range queries at once against one Prometheus"),
    pytest.param(["--from", "now-1h", "--to", "now", "--chunk-points", "50000"], "--chunk-points",
                 id="more points than Prometheus answers (was silently lowered)"),
    pytest.param(["--from", "now-1h", "--to", "now", "--chunk-points", "0"], "--chunk-points", id="no points"),
    pytest.param(["--from", "now-1h", "--to", "now", "--prometheus-url", "prometheus:9090"], "http://",
                 id="a URL without its scheme (was 'did not answer: prometheus:9090/api/v1/query_range')"),
    pytest.param(["--from", "now-1h", "--to", "now", "--prometheus-url", "ftp://p"], "http://", id="not HTTP"),
    pytest.param(["--from", "now-1h", "--to", "now", "--prometheus-url", "http://[::1"], "--prometheus-url",
                 id="a broken URL"),
    pytest.param(["--from", "now-1h", "--to", "now", "--tolerance", "nan"], "--tolerance", id="NaN tolerance"),
    pytest.param(["--from", "now-1h", "--to", "now", "--tolerance=-0.1"], "--tolerance", id="negative tolerance"),
])
def test_bad_times_and_limits_exit_2_with_one_message(extra: list[str], says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, *extra])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("backtest: ") and says in err and "Traceback" not in err


def test_a_range_too_long_for_the_specs_sync_periods_says_where_the_step_came_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 15 s and 17 s sync periods share a 1 s grid: a week is 604,801 steps, over the 500,000 limit.
    for name, period in (("a", 15), ("b", 17)):
        (tmp_path / f"{name}.yaml").write_text(
            "apiVersion: autoscaling.prom-autoscaler.io/v1alpha1\nkind: PromAutoscaler\nmetadata: {name: " + name
            + "}\nspec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 4, "
            f"syncPeriodSeconds: {period}, metrics: [{{type: Pods, pods: {{metric: {{name: rps}}, "
            "target: {type: AverageValue, averageValue: '1'}}}]}\n")
    (tmp_path / "r.yaml").write_text("rules: []\n")
    code = main(["-f", str(tmp_path / "a.yaml"), "--compare", str(tmp_path / "b.yaml"), "--rules",
                 str(tmp_path / "r.yaml"), "--prometheus-url", "http://127.0.0.1:1", "--from", "now-7d", "--to", "now"])
    err = capsys.readouterr().err
    assert code == 1
    assert "604,801 steps of 1s (the greatest common divisor of the specs' sync periods)" in err
    assert "use --step 15s (every spec then syncs at it)" in err
