"""The controller scales real workloads on the stand-in from metrics read through aggregation.

Each test: a Deployment (or a custom resource with a scale subresource) run by the stand-in's
workload simulator, a PromAutoscaler with an External metric on the sample exporter's
`queue_messages_ready{queue=...}` (target AverageValue 10, so desired = ceil(value / 10)), and one
controller replica. The load is an exporter gauge; "the adapter reports it" is checked through
`kubectl get --raw` on external.metrics.k8s.io, the same aggregation path the controller uses.
"""

from __future__ import annotations

import time

import pytest

from hack.stack.controller_stack import (ControllerStack, deployment, external_metric, promautoscaler,
                                   wait_until)

from .conftest import FAST_FLAGS
from .helpers import event_reasons, has_condition, scale_writes

pytestmark = pytest.mark.integration
SYNC = 3.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _start(stack: ControllerStack, ns: str, queue_value: float, metrics: list | None = None):
    stack.set_queue(ns, "orders", queue_value)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "orders", queue_value)
    stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=metrics or [external_metric("orders", "10")]))
    return stack.controller(ns, *FAST_FLAGS)


@pytest.mark.timeout(60)
def test_load_step_scales_up_within_one_sync(controller_stack: ControllerStack, ns: str) -> None:
    ctl = _start(controller_stack, ns, 5)
    wait_until(lambda: has_condition(controller_stack, ns, "web", "ScalingActive", "True", "ValidMetricFound"),
               timeout=20, what="a first successful sync")
    controller_stack.set_queue(ns, "orders", 35)  # ceil(35/10) = 4, within one step's limit max(2 x 1, 4)
    reported_at = controller_stack.wait_external(ns, "orders", 35)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 4, timeout=SYNC + 3, interval=0.1,
               what="4 replicas (ceil(35/10))")
    took = time.monotonic() - reported_at
    assert took <= SYNC + 1.5, f"scaled {took:.1f} s after the adapter reported the step"
    assert "SuccessfulRescale" in event_reasons(controller_stack, ns, "web")
    assert scale_writes(ctl) == 1


@pytest.mark.timeout(60)
def test_drop_scales_down_only_after_the_stabilization_window(controller_stack: ControllerStack, ns: str) -> None:
    _start(controller_stack, ns, 42)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 5, timeout=20, what="scaled up to 5")
    controller_stack.set_queue(ns, "orders", 11)  # wants 2
    dropped_at = controller_stack.wait_external(ns, "orders", 11)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 2, timeout=10 + 2 * SYNC + 3, interval=0.2,
               what="scaled down to 2")
    waited = time.monotonic() - dropped_at
    assert waited >= 10 - 1.0, f"scaled down {waited:.1f} s after the drop, inside the 10 s window"


@pytest.mark.timeout(60)
def test_failing_metric_blocks_scale_down_and_says_so(controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.set_queue(ns, "returns", 40)
    controller_stack.wait_external(ns, "returns", 40)
    _start(controller_stack, ns, 40, metrics=[external_metric("orders", "10"), external_metric("returns", "10")])
    wait_until(lambda: controller_stack.replicas(ns, "web") == 4, timeout=20, what="scaled up to 4")
    controller_stack.set_queue(ns, "orders", 1)  # this metric alone would go to 1
    controller_stack.exporter.remove("queue_messages_ready", {"namespace": ns, "queue": "returns"})
    wait_until(lambda: controller_stack.external_value(ns, "returns") is None, timeout=15,
               what="the returns metric failing")
    wait_until(lambda: has_condition(controller_stack, ns, "web", "ScalingActive", "False",
                                     "FailedGetExternalMetric"), timeout=3 * SYNC + 2,
               what="ScalingActive=False/FailedGetExternalMetric")
    time.sleep(10 + SYNC)  # past the stabilization window: still no scale-down on partial data
    assert controller_stack.replicas(ns, "web") == 4
    assert "FailedGetExternalMetric" in event_reasons(controller_stack, ns, "web")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workers.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "workers", "singular": "worker", "kind": "Worker", "listKind": "WorkerList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}},
                           "subresources": {"status": {}, "scale": {
                               "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                               "labelSelectorPath": ".status.selector"}}}]}}


@pytest.mark.timeout(60)
def test_custom_resource_with_scale_subresource_scales(controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.apply(CRD)
    wait_until(lambda: controller_stack.kubectl("get", "workers", "-n", ns, check=False).returncode == 0,
               timeout=20, what="workers served")
    controller_stack.apply({"apiVersion": "example.com/v1", "kind": "Worker", "metadata": {"name": "w", "namespace": ns},
                            "spec": {"replicas": 1}})
    controller_stack.kubectl("patch", "workers", "w", "-n", ns, "--subresource=status", "--type=merge",
                             "-p", '{"status": {"replicas": 1, "selector": "app=w"}}')
    controller_stack.set_queue(ns, "jobs", 31)
    controller_stack.wait_external(ns, "jobs", 31)
    controller_stack.apply(promautoscaler(ns, "w", target={"apiVersion": "example.com/v1", "kind": "Worker",
                                                           "name": "w"},
                                          metrics=[external_metric("jobs", "10")]))
    ctl = controller_stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: controller_stack.replicas(ns, "w", "workers.example.com") == 4, timeout=20,
               what="the Worker scaled to 4 through its /scale")
    assert scale_writes(ctl) == 1


@pytest.mark.timeout(60)
def test_conflict_on_scale_write_is_retried(controller_stack: ControllerStack, ns: str) -> None:
    ctl = _start(controller_stack, ns, 5)
    wait_until(lambda: has_condition(controller_stack, ns, "web", "ScalingActive", "True", "ValidMetricFound"),
               timeout=20, what="a first successful sync")
    ctl.proxy.inject_status("PUT", r"/deployments/web/scale$", 409, count=2)
    controller_stack.set_queue(ns, "orders", 30)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 3, timeout=3 * SYNC + 3, what="scaled to 3")
    injected = ctl.proxy.records("PUT", r"/scale$", injected=True)
    assert len(injected) == 2, "both conflicts were answered to the controller"
    assert scale_writes(ctl) == 1
    reasons = event_reasons(controller_stack, ns, "web")
    assert "SuccessfulRescale" in reasons and "FailedRescale" not in reasons

