"""The running controller's /metrics, as a platform engineer reads them on the end-to-end stack
(stand-in, adapter through aggregation, private Prometheus, `python -m controller`):

* a scale-up is counted with upstream's labels (`action="scale_up",error="none"`) and the metric's
  computation with `metric_type="External"`;
* the autoscaler's metric value sits next to its target (AverageValue 10 over 1 pod: 35 vs 10),
  with min/max/desired replicas;
* a regular sync sets KEP-6003's `reconciliation_delay_ratio` near 1;
* client-go's `leader_election_master_status` and `workqueue_*` names are there;
* `kubectl delete promautoscaler` removes every series that names it.
"""

from __future__ import annotations

import pytest

from hack.stack.controller_stack import ControllerProcess, ControllerStack, deployment, external_metric, promautoscaler, wait_until

from .conftest import FAST_FLAGS

pytestmark = pytest.mark.integration
P = "prom_autoscaler_controller_"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def value(ctl: ControllerProcess, metric: str, labels: dict[str, str]) -> float:
    """`ctl.metric` for label sets that include `name` (its own first parameter)."""
    want = set(labels.items())
    return sum(v for (n, lbls), v in ctl.metrics().items() if n == metric and want <= lbls)


@pytest.mark.timeout(90)
def test_upstream_labels_value_next_to_target_and_no_series_after_delete(controller_stack: ControllerStack,
                                                                          ns: str) -> None:
    stack = controller_stack
    stack.set_queue(ns, "orders", 35)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "orders", 35)
    stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    ctl = stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: stack.replicas(ns, "web") == 4, timeout=20, what="scaled 1 -> 4")
    wait_until(lambda: ctl.metric(P + "reconciliations_total", action="scale_up", error="none", result="scaled"),
               timeout=10, what="a scale-up counted with upstream's labels")
    assert ctl.metric(P + "metric_computation_total", action="scale_up", error="none", metric_type="External") >= 1
    assert ctl.metric(P + "reconciliation_duration_seconds_count", action="scale_up", error="none") >= 1
    mine = {"namespace": ns, "name": "web"}
    metric = {**mine, "metric_name": "queue_messages_ready", "metric_type": "External", "target_type": "AverageValue"}
    assert value(ctl, P + "metric_target", metric) == 10.0
    assert value(ctl, P + "metric_value", metric) == 35.0, "35 over the 1 pod the sync saw"
    assert (value(ctl, P + "min_replicas", mine), value(ctl, P + "max_replicas", mine)) == (1.0, 10.0)
    assert value(ctl, P + "desired_replicas", mine) == 4.0
    assert any(n == P + "paused" and {("namespace", ns), ("name", "web")} <= lb for n, lb in ctl.metrics())
    assert value(ctl, "leader_election_master_status", {"name": "prom-autoscaler-controller"}) == 1.0
    assert value(ctl, "workqueue_adds_total", {"name": "promautoscaler"}) >= 1
    assert value(ctl, "workqueue_work_duration_seconds_count", {"name": "promautoscaler"}) >= 1
    # wired to the running worker pool: a sync of this stack takes far less than a second
    assert 0.0 <= value(ctl, "workqueue_longest_running_processor_seconds", {"name": "promautoscaler"}) < 1.0

    ratio = wait_until(lambda: value(ctl, P + "reconciliation_delay_ratio", mine), timeout=10,
                       what="KEP-6003's delay ratio after a regular sync")
    assert 1.0 <= ratio < 2.0, "a regular sync on a 3 s period starts well within a period late"

    stack.kubectl("delete", "promautoscalers.autoscaling.prom-autoscaler.io", "web", "-n", ns)

    def series_naming_it() -> list[str]:
        return [n for (n, labels), _ in ctl.metrics().items() if ("namespace", ns) in labels]

    wait_until(lambda: not series_naming_it(), timeout=10, what="no series of the deleted PromAutoscaler")
