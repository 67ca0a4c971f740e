"""The adapter benchmark's report judges the issue #12 bars from the figures it is given."""

from __future__ import annotations

import argparse

import pytest

from hack.bench.adapter_report import Latency, Rate, report, round_ratios

_ARGS = argparse.Namespace(requests=300, concurrency=16, seconds=6.0)
_CPU = {"adapter": 1.5, "prometheus": 2.5, "floor": 0.0, "client": 0.6}


def _latencies(adapter_100: float, adapter_2000: float) -> dict[str, Latency]:
    p50 = {"direct_100": 3.0, "floor_100": 4.0, "transform_100": 4.2, "adapter_100": adapter_100,
           "direct_2000": 30.0, "regex_2000": 45.0, "floor_2000": 31.0, "transform_2000": 44.0,
           "adapter_2000": adapter_2000, "discovery": 1.5}
    return {name: Latency(p50_ms=value, p99_ms=2 * value) for name, value in p50.items()}


def _rates(adapter_apart: tuple[float, ...], direct_apart: tuple[float, ...]) -> dict[str, Rate]:
    def rate(rounds: tuple[float, ...]) -> Rate:
        return Rate(per_second=sum(rounds) / len(rounds), cpu_ms=dict(_CPU), rounds=rounds)
    shared = (600.0, 600.0, 600.0)
    return {"direct_100_own": rate(shared), "floor_100_own": rate((450.0,) * 3), "adapter_100_own": rate((380.0,) * 3),
            "direct_100": rate(shared), "adapter_100": rate((1000.0,) * 3),
            "direct_100_own_apart": rate(direct_apart), "floor_100_own_apart": rate((380.0,) * 3),
            "adapter_100_own_apart": rate(adapter_apart)}


def test_every_bar_met_passes(capsys: pytest.CaptureFixture[str]) -> None:
    ok = report({"latency": _latencies(4.5, 35.0), "throughput": _rates((350.0, 360.0, 370.0), (380.0, 380.0, 380.0))},
                _ARGS)
    out = capsys.readouterr().out
    assert ok
    assert out.count("PASS") == 3
    assert "Prometheus on its CPU   0.95" in out
    assert "slice by slice: 0.92 0.95 0.97" in out


@pytest.mark.parametrize(("adapter_100", "adapter_2000", "apart", "failed"), [
    (4.7, 35.0, (350.0, 360.0, 370.0), "100 pods"),  # 1.175 x the zero-work proxy
    (4.5, 37.0, (350.0, 360.0, 370.0), "2,000 pods"),  # 1.23 x the direct namespace query
    (4.5, 35.0, (330.0, 330.0, 330.0), "Prometheus on its CPU"),  # 0.87 x direct
])
def test_a_missed_bar_fails_the_run(capsys: pytest.CaptureFixture[str], adapter_100: float, adapter_2000: float,
                                    apart: tuple[float, ...], failed: str) -> None:
    ok = report({"latency": _latencies(adapter_100, adapter_2000), "throughput": _rates(apart, (380.0,) * 3)}, _ARGS)
    fails = [line for line in capsys.readouterr().out.splitlines() if line.endswith("FAIL")]
    assert not ok
    assert len(fails) == 1 and failed in fails[0]


def test_slice_ratios_pair_the_interleaved_slices() -> None:
    adapter = Rate(per_second=0.0, cpu_ms={}, rounds=(300.0, 330.0, 360.0))
    direct = Rate(per_second=0.0, cpu_ms={}, rounds=(400.0, 330.0, 300.0))
    assert round_ratios(adapter, direct) == [0.75, 1.0, 1.2]
