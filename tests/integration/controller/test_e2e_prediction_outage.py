"""Predictive scaling end to end, issue 24's fault bar: an outage of the history's Prometheus
leaves reactive scaling working, says so, and prediction comes back when that Prometheus does.

A second Prometheus holds three days of `queue_messages_ready` at 60 s (a daily hour at 160, the
rest at 20, the hour far from now, so the forecast asks for one replica and is trusted). The
controller reads it with `--history-step=10s --history-refresh=5s` (so an outage is seen, and
the recovery read, within seconds rather than the default minute). Once the `PredictionActive`
condition is True the history Prometheus is stopped (the adapter's own Prometheus stays up, so
the live value is readable) and the live value raised to 100: reacting alone must take the
Deployment to 5 replicas, the condition turns to HistoryUnavailable and the controller keeps
running. The history Prometheus is started again on the same data directory and port, and the
same controller process trusts its forecasts again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.stack.backfill import BackfilledPrometheus
from hack.stack.controller_stack import ControllerStack, wait_until

from .prediction_stack import daily_history, start_predictive

pytestmark = pytest.mark.integration

RAMP_IN = 6 * 3600  # the daily high hour starts this long from now: far outside the horizon
LOW, HIGH, LIVE, PER_POD = 20.0, 160.0, 100.0, "20"  # the forecast asks for 1 replica; 100 / 20 = 5 live
HISTORY_FLAGS = ("--history-step=10s", "--history-refresh=5s")


@pytest.fixture
def history(ns: str, tmp_path: Path) -> Iterator[BackfilledPrometheus]:
    text = daily_history(ns, now=time.time(), ramp_in=RAMP_IN, low=LOW, high=HIGH)
    with BackfilledPrometheus(text, workdir=tmp_path) as server:
        yield server


def _prediction(stack: ControllerStack, ns: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(status.prediction, the PredictionActive condition) as last written."""
    status = (stack.get("promautoscalers", ns, "web") or {}).get("status") or {}
    active = [c for c in status.get("conditions") or [] if c.get("type") == "PredictionActive"]
    return status.get("prediction") or {}, (active[0] if active else {})


@pytest.mark.timeout(120)
def test_a_history_outage_leaves_reactive_scaling_working_and_prediction_comes_back(
        controller_stack: ControllerStack, ns: str, history: BackfilledPrometheus) -> None:
    stack = controller_stack
    ctl = start_predictive(stack, ns, history_url=history.url, live=LOW, per_pod=PER_POD, flags=HISTORY_FLAGS)
    pid = ctl.proc.pid if ctl.proc else None

    wait_until(lambda: _prediction(stack, ns)[1].get("status") == "True", timeout=40, interval=0.5,
               what="PredictionActive True from the backfilled history")
    assert stack.replicas(ns, "web") == 1  # the trusted forecast asks for what the live value does

    history.server.stop()
    stack.set_queue(ns, "orders", LIVE)
    wait_until(lambda: stack.replicas(ns, "web") == 5, timeout=30, interval=0.5,
               what="5 replicas from the live value alone, the history's Prometheus down")
    wait_until(lambda: _prediction(stack, ns)[1].get("reason") == "HistoryUnavailable", timeout=30, interval=0.5,
               what="PredictionActive saying HistoryUnavailable")
    prediction, condition = _prediction(stack, ns)
    assert condition["status"] == "False" and "no history of" in condition["message"], condition
    assert prediction["reason"] == "HistoryUnavailable" and prediction["reactiveReplicas"] == 5, prediction
    [metric] = prediction["metrics"]
    assert "forecast" not in metric and "history unavailable" in metric.get("message", ""), metric
    rescales = [e.get("message", "") for e in stack.events(ns, "web") if e.get("reason") == "SuccessfulRescale"]
    assert rescales and not any("forecast" in m for m in rescales), rescales
    assert ctl.running, ctl.log_tail()

    history.server.start()
    wait_until(lambda: _prediction(stack, ns)[1].get("status") == "True", timeout=30, interval=0.5,
               what="PredictionActive True again once the history's Prometheus is back")
    prediction, _ = _prediction(stack, ns)
    assert prediction["reason"] == "ForecastTrusted" and prediction["metrics"][0]["trusted"] is True, prediction
    assert ctl.running and ctl.proc is not None and ctl.proc.pid == pid, "the controller was restarted"
    assert stack.replicas(ns, "web") == 5
