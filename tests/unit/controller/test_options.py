"""Flags of the controller: kube-controller-manager names and defaults, Go durations, usage errors."""

from __future__ import annotations

import pytest

from controller.options import parse


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "invalid duration ''"), ("5", "missing unit in duration '5'"), ("5x", "unknown unit 'x' in duration '5x'"),
     ("m", "invalid duration 'm'"), ("1m 30s", "unknown unit 'm ' in duration '1m 30s'"), ("s5", "invalid duration 's5'"),
     ("1d", "unknown unit 'd' in duration '1d'"), ("-1s", "duration '-1s' must not be negative")],
    ids=["empty", "no-unit", "bad-unit", "no-number", "space", "unit-first", "days", "negative"],
)
def test_bad_durations_are_usage_errors_saying_why(text: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse([f"--horizontal-pod-autoscaler-downscale-stabilization={text}"])
    assert exit_info.value.code == 2
    assert f"--horizontal-pod-autoscaler-downscale-stabilization: {message}" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "seconds"), [("1h30m", 5400.0), ("250ms", 0.25), ("1.5s", 1.5), ("0", 0.0)], ids=repr)
def test_go_durations_are_read(text: str, seconds: float) -> None:
    assert parse(["--horizontal-pod-autoscaler-downscale-stabilization", text]).downscale_stabilization == seconds


def test_defaults_match_kube_controller_manager() -> None:
    o = parse([])
    assert (o.concurrent_syncs, o.sync_period, o.tolerance) == (5, 15.0, 0.1)
    assert (o.downscale_stabilization, o.cpu_initialization_period, o.initial_readiness_delay) == (300.0, 300.0, 30.0)
    assert (o.leader_elect, o.lease_duration, o.renew_deadline, o.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (o.preview_native_hpas, o.metrics_port, o.watch_namespace) == (False, 8080, None)


def test_flags_are_read() -> None:
    o = parse(["--leader-elect=false", "--preview-native-hpas", "--concurrent-syncs", "20",
               "--horizontal-pod-autoscaler-downscale-stabilization", "1m", "--watch-namespace", "shop"])  # fmt: skip
    assert (o.leader_elect, o.preview_native_hpas, o.concurrent_syncs) == (False, True, 20)
    assert (o.downscale_stabilization, o.watch_namespace) == (60.0, "shop")


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--horizontal-pod-autoscaler-sync-period", "15"], "--horizontal-pod-autoscaler-sync-period"),
     (["--horizontal-pod-autoscaler-sync-period", "0s"], "--horizontal-pod-autoscaler-sync-period"),
     (["--concurrent-syncs", "0"], "--concurrent-syncs"),
     (["--leader-elect", "maybe"], "--leader-elect"),
     (["--horizontal-pod-autoscaler-tolerance", "1.5"], "--horizontal-pod-autoscaler-tolerance"),
     (["--metrics-port", "70000"], "--metrics-port"),
     (["--leader-elect-renew-deadline", "20s"], "--leader-elect-lease-duration"),
     (["--leader-elect-retry-period", "9s"], "--leader-elect-renew-deadline")],
    ids=["no-unit", "zero-period", "zero-workers", "bad-bool", "tolerance", "port", "renew>lease", "retry>renew"],
)
def test_bad_values_are_usage_errors_naming_the_flag(argv: list[str], named: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err
