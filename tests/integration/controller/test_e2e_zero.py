"""Scale to zero end to end (issue 25): kubectl, the API-server stand-in, the adapter with its real
Prometheus, and one controller process.

A Deployment scaled by a PromAutoscaler with `minReplicas: 0`, an External queue metric at 10 per pod
(`queue_messages_ready{queue=orders}`, the sample exporter's gauge) and `scaleToZero.cooldownSeconds: 4`.
Objects sync every 3 s; the downscale stabilization window is 10 s (FAST_FLAGS).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from hack.stack.controller_stack import ControllerStack, deployment, external_metric, promautoscaler, wait_until

from .conftest import FAST_FLAGS
from .helpers import condition, event_reasons, has_condition

pytestmark = pytest.mark.integration
SYNC, COOLDOWN, WINDOW = 3.0, 4, 10.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}
IDLE = "prom_autoscaler_controller_idle_seconds"


def _start(stack: ControllerStack, ns: str, *, queue: float, replicas: int):
    stack.set_queue(ns, "orders", queue)
    stack.apply(deployment(ns, "worker", replicas=replicas))
    stack.wait_external(ns, "orders", queue)
    pas = promautoscaler(ns, "worker", target=TARGET, metrics=[external_metric("orders", "10")], min_replicas=0)
    pas["spec"]["scaleToZero"] = {"cooldownSeconds": COOLDOWN}
    stack.apply(pas)
    return stack.controller(ns, *FAST_FLAGS)


def _replicas_column(stack: ControllerStack, ns: str) -> str:
    """The REPLICAS column of `kubectl get pas`, as a user reads it."""
    header, row = stack.kubectl("get", "pas", "worker", "-n", ns).stdout.splitlines()[:2]
    return dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip()), strict=False))["REPLICAS"]


@pytest.mark.timeout(120)
def test_idle_goes_to_zero_after_the_cooldown_survives_an_outage_and_wakes_to_4(
        controller_stack: ControllerStack, ns: str) -> None:
    stack = controller_stack
    ctl = _start(stack, ns, queue=0, replicas=2)
    started = time.monotonic()
    wait_until(lambda: stack.replicas(ns, "worker") == 0, timeout=WINDOW + COOLDOWN + 4 * SYNC, interval=0.2,
               what="the empty queue taking 2 replicas to 0")
    assert time.monotonic() - started >= COOLDOWN, "went to 0 before the cooldown"
    wait_until(lambda: has_condition(stack, ns, "worker", "ScalingActive", "False", "ScaledToZero"), timeout=3 * SYNC,
               what="ScalingActive=False/ScaledToZero")
    message = (condition(stack, ns, "worker", "ScalingActive") or {}).get("message", "")
    assert "External queue_messages_ready 0 <= activation 0" in message, message
    went = [e.get("message", "") for e in stack.events(ns, "worker") if e.get("reason") == "ScaledToZero"]
    assert went and "-> 0 replicas" in went[0] and "queue_messages_ready 0 <= activation 0" in went[0], went
    time.sleep(2 * SYNC)
    assert stack.replicas(ns, "worker") == 0, "did not hold 0"
    assert _replicas_column(stack, ns) == "0"
    labels = frozenset({"kind": "PromAutoscaler", "namespace": ns, "name": "worker"}.items())
    wait_until(lambda: ctl.metrics().get((IDLE, labels), 0) >= COOLDOWN, timeout=3 * SYNC,
               what="idle_seconds on /metrics")
    assert ctl.metrics()[("prom_autoscaler_controller_scaled_to_zero", labels)] == 1.0

    stack.prometheus.stop()
    try:
        wait_until(lambda: stack.external_value(ns, "orders") is None, timeout=15, what="the queue metric unreadable")
        wait_until(lambda: has_condition(stack, ns, "worker", "ScalingActive", "False", "FailedGetExternalMetric"),
                   timeout=4 * SYNC, what="ScalingActive=False/FailedGetExternalMetric while Prometheus is down")
        time.sleep(2 * SYNC)
        assert stack.replicas(ns, "worker") == 0, "an outage woke it"
        assert ctl.running, ctl.log_tail()
    finally:
        stack.prometheus.start()
    stack.wait_external(ns, "orders", 0, timeout=30)

    stack.set_queue(ns, "orders", 35)  # ceil(35 / 10) = 4
    reported_at = stack.wait_external(ns, "orders", 35)
    wait_until(lambda: stack.replicas(ns, "worker") == 4, timeout=2 * SYNC + 2, interval=0.1,
               what="35 messages taking 0 to 4 within two syncs")
    assert time.monotonic() - reported_at <= 2 * SYNC + 2
    woke = [e.get("message", "") for e in stack.events(ns, "worker") if e.get("reason") == "WokenFromZero"]
    assert woke and "waking from 0 to 4 replicas: External queue_messages_ready 35 > activation 0" in woke[0], woke
    assert ctl.running, ctl.log_tail()


@pytest.mark.timeout(90)
def test_a_metric_error_while_running_never_goes_to_zero(controller_stack: ControllerStack, ns: str) -> None:
    stack = controller_stack
    _start(stack, ns, queue=5, replicas=2)  # 5 messages: active, 1 replica wanted
    wait_until(lambda: stack.replicas(ns, "worker") == 1, timeout=WINDOW + 4 * SYNC, what="down to 1 replica")
    stack.exporter.remove("queue_messages_ready", {"namespace": ns, "queue": "orders"})
    wait_until(lambda: stack.external_value(ns, "orders") is None, timeout=15, what="the queue metric failing")
    wait_until(lambda: has_condition(stack, ns, "worker", "ScalingActive", "False", "FailedGetExternalMetric"),
               timeout=4 * SYNC, what="ScalingActive=False/FailedGetExternalMetric")
    time.sleep(WINDOW + COOLDOWN + SYNC)  # past the window and the cooldown: an empty queue would be at 0 now
    assert stack.replicas(ns, "worker") == 1
    assert "ScaledToZero" not in event_reasons(stack, ns, "worker")


def test_the_crd_refuses_min_zero_with_only_pods_metrics_naming_the_field(
        controller_stack: ControllerStack, ns: str) -> None:
    pods_only = promautoscaler(ns, "web", target=TARGET, min_replicas=0, metrics=[
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1"}}}])
    out = controller_stack.kubectl("apply", "-f", "-", input=json.dumps(pods_only), check=False)
    assert out.returncode == 1
    assert ('The PromAutoscaler "web" is invalid: spec.metrics: Forbidden: must specify at least one Object or '
            "External metric to support scaling to zero replicas") in out.stderr, out.stderr
    assert controller_stack.get("promautoscalers", ns, "web") is None
