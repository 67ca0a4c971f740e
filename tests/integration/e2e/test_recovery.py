"""Prometheus goes down and comes back: metric requests answer 503 ServiceUnavailable (never 500,
never a hang), discovery keeps answering 200 from the last registry, and the adapter serves values
again as soon as Prometheus is back, without a restart."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import Stack, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150),
              pytest.mark.standin_only("stops and restarts the local Prometheus")]  # incl. stack start

POD = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-7d9f8-abcde/app_sessions_active"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready"
NODES = "/apis/metrics.k8s.io/v1beta1/nodes"
DISCOVERY = "/apis/custom.metrics.k8s.io/v1beta1"


def test_prometheus_down_then_back(stack: Stack) -> None:
    assert stack.api(POD)[0] == 200
    stack.prometheus.stop()
    try:
        for path in (POD, EXTERNAL, NODES):
            started = time.monotonic()
            code, _, body = stack.api(path)
            assert time.monotonic() - started < 10, "no hang while Prometheus is down"
            assert (code, body["reason"], body["code"]) == (503, "ServiceUnavailable", 503), body
            assert "unable to fetch metrics" in body["message"]
            assert "127.0.0.1" not in body["message"], "backend details stay in the log"
        discovery = stack.raw_json(DISCOVERY)
        assert any(r["name"] == "pods/app_sessions_active" for r in discovery["resources"])
        result = stack.raw(POD)
        assert result.stderr.startswith("Error from server (ServiceUnavailable): unable to fetch metrics")
    finally:
        stack.prometheus.start()
    wait_until(lambda: stack.api(POD)[0] == 200, timeout=30, what="metrics served again")
    [item] = json.loads(stack.raw(POD).stdout)["items"]
    assert item["value"] == "50"
    wait_until(lambda: stack.kubectl("top", "nodes", check=False).returncode == 0, timeout=30,
               what="kubectl top nodes working again")
