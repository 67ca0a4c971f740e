"""Preview decides without touching anything: a Preview-mode PromAutoscaler and a native HPA under
`--preview-native-hpas` lead to no /scale write and no write to the HPA; a native HPA on the same
target as a PromAutoscaler blocks scaling with ScalingActive=False/ConflictingAutoscaler.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from hack.stack.controller_stack import REPO, ControllerStack, deployment, external_metric, promautoscaler, wait_until

from .conftest import FAST_FLAGS
from .helpers import controller_events, event_reasons, has_condition, scale_writes, writes

pytestmark = pytest.mark.integration
SYNC = 3.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _hpa(ns: str) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [external_metric("orders", "10")]}}


def _load(stack: ControllerStack, ns: str, value: float) -> None:
    stack.set_queue(ns, "orders", value)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "orders", value)


@pytest.mark.timeout(60)
def test_preview_mode_decides_but_never_scales(controller_stack: ControllerStack, ns: str) -> None:
    _load(controller_stack, ns, 35)
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")],
                                          mode="Preview"))
    ctl = controller_stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: "PreviewRescale" in event_reasons(controller_stack, ns, "web"), timeout=4 * SYNC,
               what="a PreviewRescale event")
    time.sleep(2 * SYNC)
    assert controller_stack.replicas(ns, "web") == 1
    assert scale_writes(ctl, ok_only=False) == 0
    status = (controller_stack.get("promautoscalers", ns, "web") or {}).get("status") or {}
    assert status.get("desiredReplicas") == 4, status


@pytest.mark.timeout(60)
def test_preview_of_native_hpas_writes_nothing(controller_stack: ControllerStack, ns: str) -> None:
    _load(controller_stack, ns, 35)
    controller_stack.apply(_hpa(ns))
    ctl = controller_stack.controller(ns, *FAST_FLAGS, "--preview-native-hpas")
    wait_until(lambda: ctl.metric("prom_autoscaler_controller_desired_replicas", namespace=ns,
                                  kind="HorizontalPodAutoscaler") == 4,
               timeout=5 * SYNC, interval=0.5, what="the previewed desired replicas published")
    time.sleep(SYNC)
    assert writes(ctl) == [], "preview of native HPAs wrote to the cluster"
    assert controller_stack.replicas(ns, "web") == 1
    assert controller_events(controller_stack, ns) == [], "preview of native HPAs recorded events"
    explained = subprocess.run([sys.executable, "-m", "controller", "explain", "--hpa", f"{ns}/web",
                                f"--controller-url={ctl.url}", f"--token={controller_stack.token}",
                                "--insecure-skip-tls-verify"],
                               cwd=REPO, capture_output=True, text=True, timeout=30)
    assert explained.returncode == 0 and "queue_messages_ready" in explained.stdout, explained.stdout + explained.stderr


@pytest.mark.timeout(60)
def test_native_hpa_on_the_same_target_blocks_scaling(controller_stack: ControllerStack, ns: str) -> None:
    _load(controller_stack, ns, 35)
    controller_stack.apply(_hpa(ns))
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    ctl = controller_stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: has_condition(controller_stack, ns, "web", "ScalingActive", "False", "ConflictingAutoscaler"),
               timeout=4 * SYNC, what="ScalingActive=False/ConflictingAutoscaler")
    time.sleep(SYNC)
    assert controller_stack.replicas(ns, "web") == 1
    assert scale_writes(ctl, ok_only=False) == 0
    assert "ConflictingAutoscaler" in event_reasons(controller_stack, ns, "web")
