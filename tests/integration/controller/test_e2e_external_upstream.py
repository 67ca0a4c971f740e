"""External metrics as upstream's HPA uses them, on the real path (controller process, stand-in,
aggregation, adapter, Prometheus) and read back as a user does, with kubectl:

* a Value target compares the sum of every series the metric selector picks (`matchExpressions`
  `In` included) with the target, times the ready pods (`GetExternalMetricReplicas`);
* a selector that matches no series is an empty list, which upstream's metrics client turns into
  "no metrics returned from external metrics API": ScalingActive=False/FailedGetExternalMetric
  with upstream's words naming namespace, metric and selector, and the workload is not scaled.
"""

from __future__ import annotations

import time

import pytest

from hack.stack.controller_stack import ControllerStack, deployment, promautoscaler, wait_until

from .conftest import FAST_FLAGS
from .helpers import condition, has_condition

pytestmark = pytest.mark.integration
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _metric(selector: dict, target: dict) -> dict:
    return {"type": "External", "external": {"metric": {"name": "queue_messages_ready", "selector": selector},
                                             "target": target}}


def _rescales(stack: ControllerStack, ns: str) -> list[str]:
    return [e.get("message", "") for e in stack.events(ns, "web") if e.get("reason") == "SuccessfulRescale"]


@pytest.mark.timeout(60)
def test_a_value_target_scales_on_the_sum_of_the_selected_series(controller_stack: ControllerStack, ns: str) -> None:
    stack = controller_stack
    for queue, value in (("orders", 30), ("returns", 20), ("emails", 1000)):
        stack.set_queue(ns, queue, value)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "emails", 1000)
    selector = {"matchExpressions": [{"key": "queue", "operator": "In", "values": ["returns", "orders"]}]}
    stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[_metric(selector, {"type": "Value", "value": "25"})]))
    stack.controller(ns, *FAST_FLAGS)
    # (30 + 20) / 25 = 2 x 1 ready pod; emails (not selected) would make it 42
    wait_until(lambda: stack.replicas(ns, "web") == 2, timeout=20, what="2 replicas from 30 + 20 against 25")
    printed = ("&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement"
               "{LabelSelectorRequirement{Key:queue,Operator:In,Values:[returns orders],},},}")
    assert _rescales(stack, ns) == [f"New size: 2; reason: external metric queue_messages_ready({printed}) above target"]
    pas = stack.get("promautoscalers", ns, "web")
    assert pas is not None
    [current] = pas["status"]["currentMetrics"]
    assert current["external"]["current"]["value"] == "50"


@pytest.mark.timeout(60)
def test_a_selector_matching_no_series_never_scales_and_says_so(controller_stack: ControllerStack, ns: str) -> None:
    stack = controller_stack
    stack.set_queue(ns, "orders", 5)
    stack.apply(deployment(ns, "web", replicas=3))
    stack.wait_external(ns, "orders", 5)
    metric = _metric({"matchLabels": {"queue": "ghost"}}, {"type": "AverageValue", "averageValue": "10"})
    stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[metric]))
    stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: has_condition(stack, ns, "web", "ScalingActive", "False", "FailedGetExternalMetric"),
               timeout=20, what="ScalingActive=False/FailedGetExternalMetric")
    printed = ("&LabelSelector{MatchLabels:map[string]string{queue: ghost,},"
               "MatchExpressions:[]LabelSelectorRequirement{},}")
    inner = f"unable to get external metric {ns}/queue_messages_ready/{printed}: no metrics returned from external " \
            "metrics API"
    active = condition(stack, ns, "web", "ScalingActive")
    assert active is not None and active["message"] == f"the HPA was unable to compute the replica count: {inner}"
    warnings = [e.get("message") for e in stack.events(ns, "web") if e.get("reason") == "FailedGetExternalMetric"]
    assert warnings == [inner]
    time.sleep(10 + 3)  # past the 10 s downscale window: an unreadable metric is never read as zero
    assert stack.replicas(ns, "web") == 3 and _rescales(stack, ns) == []
