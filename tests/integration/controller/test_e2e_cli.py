"""What a user types: `kubectl get pas` shows the printer columns; `prom-autoscaler-controller
explain NS/NAME` prints the last decision's trace (each metric against its target, the steps, why
the final count); and the running controller reaches the same replica counts as
`controller.algorithm` fed the same metric sequence.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from controller.algorithm import ControllerConfig, complete, decide
from controller.algorithm.spec import ExternalSamples, ScaleTarget, SyncInput
from controller.kube.hpa_spec import autoscaler_spec
from hack.stack.controller_stack import REPO, ControllerStack, deployment, external_metric, promautoscaler, wait_until

from .conftest import FAST_FLAGS

pytestmark = pytest.mark.integration
SYNC = 3.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _scaled(stack: ControllerStack, ns: str, value: float, replicas: int) -> None:
    stack.set_queue(ns, "orders", value)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "orders", value)
    stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: stack.replicas(ns, "web") == replicas, timeout=4 * SYNC, what=f"scaled to {replicas}")


@pytest.mark.timeout(60)
def test_kubectl_get_pas_shows_the_columns(controller_stack: ControllerStack, ns: str) -> None:
    _scaled(controller_stack, ns, 35, 4)

    def listing() -> str:  # REPLICAS is status.currentReplicas: the count the next sync reads
        out = controller_stack.kubectl("get", "pas", "-n", ns).stdout
        return out if len(out.splitlines()) > 1 and "4" in out.splitlines()[1].split() else ""
    out = wait_until(listing, timeout=4 * SYNC, interval=0.5, what="kubectl get pas showing 4 replicas")
    header, row = out.splitlines()[:2]
    for column in ("NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "MODE", "AGE"):
        assert column in header.split(), (column, out)
    cells = row.split()
    assert cells[0] == "web" and "Deployment/web" in row and "Active" in cells, out
    start = header.index("REPLICAS")  # kubectl aligns the cells under the header
    assert row[start:].split()[0] == "4", out
    assert "queue_messages_ready" in row[header.index("TARGETS"):start], out


@pytest.mark.timeout(60)
def test_explain_prints_the_trace(controller_stack: ControllerStack, ns: str) -> None:
    _scaled(controller_stack, ns, 35, 4)
    kubeconfig = controller_stack.controllers[0].workdir / "kubeconfig"
    text = subprocess.run([sys.executable, "-m", "controller", "explain", f"{ns}/web", f"--kubeconfig={kubeconfig}"],
                          cwd=REPO, capture_output=True, text=True, timeout=30)
    assert text.returncode == 0, text.stderr
    assert "queue_messages_ready" in text.stdout and "4" in text.stdout, text.stdout
    as_json = subprocess.run([sys.executable, "-m", "controller", "explain", f"{ns}/web", "-o", "json",
                              f"--kubeconfig={kubeconfig}"], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)


# Held values of queue_messages_ready (target AverageValue 10 per pod) and a behavior whose only
# timing is a 600 s policy period, longer than the test: so each step's settled count does not
# depend on when a sync falls, and tolerance, the rate limits and the max clamp all take part.
SEQUENCE = (25, 27, 60, 200, 5)
BEHAVIOR = {"scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 3, "periodSeconds": 600}]},
            "scaleDown": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 600}]}}
SYNCS_PER_STEP = 2


def _algorithm_counts(spec_json: dict) -> list[int]:
    spec, _ = autoscaler_spec(spec_json)
    config = ControllerConfig(downscale_stabilization=10.0)
    replicas, history, now, counts = 1, None, 0.0, []
    for value in SEQUENCE:
        for _ in range(SYNCS_PER_STEP):
            now += SYNC
            decision = decide(SyncInput(spec=spec, scale=ScaleTarget(spec_replicas=replicas, status_replicas=replicas),
                                        now=now, observations=(ExternalSamples(values=(int(value * 1000),)),),
                                        history=history), config)
            if decision.write:
                decision = complete(decision, write_error=None, now=now)
                replicas = decision.desired_replicas
            history = decision.history
        counts.append(replicas)
    return counts


@pytest.mark.timeout(60)
def test_controller_and_algorithm_agree(controller_stack: ControllerStack, ns: str) -> None:
    pas = promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")], max_replicas=8,
                         behavior=BEHAVIOR)
    expected = _algorithm_counts(pas["spec"])
    controller_stack.set_queue(ns, "orders", SEQUENCE[0])
    controller_stack.apply(deployment(ns, "web", replicas=1))
    controller_stack.wait_external(ns, "orders", SEQUENCE[0])
    controller_stack.apply(pas)
    controller_stack.controller(ns, *FAST_FLAGS)
    observed = []
    for value in SEQUENCE:
        controller_stack.set_queue(ns, "orders", value)
        controller_stack.wait_external(ns, "orders", value)
        time.sleep(SYNCS_PER_STEP * SYNC)
        observed.append(controller_stack.replicas(ns, "web"))
    assert observed == expected, f"controller {observed} vs algorithm {expected}"
    assert len(set(expected)) >= 3, f"the sequence exercises too little: {expected}"
