"""State and leadership survive process death: a restarted controller keeps the scale-down budget
it had spent (restored from the status checkpoint, `StateRestored`), and of two replicas only the
leader writes; killing it hands over within the lease duration and no change is written twice.
"""

from __future__ import annotations

import json
import time

import pytest

from hack.stack.controller_stack import ControllerStack, deployment, external_metric, promautoscaler, wait_until

from .conftest import FAST_FLAGS
from .helpers import event_reasons, scale_writes

pytestmark = pytest.mark.integration
SYNC = 3.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
# at most one pod removed per 20 s, no stabilization: the only thing holding a second scale-down
# back is the remembered scale-down event, which a fresh process would not have
ONE_POD_PER_20S = {"scaleDown": {"stabilizationWindowSeconds": 0,
                                 "policies": [{"type": "Pods", "value": 1, "periodSeconds": 20}]}}
LEASE = ("--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s")


def _lease_holder(stack: ControllerStack, ns: str) -> str:
    out = stack.kubectl("get", "leases", "-n", ns, "-o", "json")
    items = json.loads(out.stdout)["items"]
    return str(items[0]["spec"].get("holderIdentity") or "") if items else ""


@pytest.mark.timeout(75)
def test_restart_mid_window_does_not_scale_down_early(controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.set_queue(ns, "orders", 40)
    controller_stack.apply(deployment(ns, "web", replicas=4))
    controller_stack.wait_external(ns, "orders", 40)
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")],
                                          behavior=ONE_POD_PER_20S))
    first = controller_stack.controller(ns, *FAST_FLAGS)
    controller_stack.set_queue(ns, "orders", 1)
    controller_stack.wait_external(ns, "orders", 1)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 3, timeout=3 * SYNC + 3, what="first step down")
    stepped_at = time.monotonic()
    time.sleep(1.0)  # the status checkpoint of that write lands
    first.kill()
    second = controller_stack.controller(ns, *FAST_FLAGS)
    wait_until(lambda: "StateRestored" in event_reasons(controller_stack, ns, "web"), timeout=4 * SYNC,
               what="a StateRestored event")
    while time.monotonic() - stepped_at < 17.0:  # the 20 s budget is still spent
        assert controller_stack.replicas(ns, "web") == 3, "scaled down again inside the policy period"
        time.sleep(0.5)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 2, timeout=3 * SYNC + 6, what="next step down")
    assert scale_writes(first) == 1 and scale_writes(second) == 1


@pytest.mark.timeout(75)
def test_two_replicas_one_writer_and_failover_within_the_lease(controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.set_queue(ns, "orders", 20)
    controller_stack.apply(deployment(ns, "web", replicas=1))
    controller_stack.wait_external(ns, "orders", 20)
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    a = controller_stack.controller(ns, *FAST_FLAGS, *LEASE, name="a")
    wait_until(lambda: controller_stack.replicas(ns, "web") == 2, timeout=4 * SYNC, what="a scaled to 2")
    b = controller_stack.controller(ns, *FAST_FLAGS, *LEASE, name="b")
    holder = _lease_holder(controller_stack, ns)
    assert holder, "a Lease with a holder"
    controller_stack.set_queue(ns, "orders", 30)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 3, timeout=4 * SYNC, what="scaled to 3")
    time.sleep(2 * SYNC)
    assert scale_writes(a) == 2 and scale_writes(b) == 0, "the standby wrote while the leader led"

    a.kill()
    killed_at = time.monotonic()
    wait_until(lambda: _lease_holder(controller_stack, ns) not in ("", holder), timeout=15,
               interval=0.2, what="b holding the Lease")
    took = time.monotonic() - killed_at
    # client-go's bound: the standby saw the last renew up to one jittered retry (<= 2.2 s) late,
    # waits the 4 s lease from then, and tries again up to one jittered retry later; + 0.5 s polling
    assert took <= 4.0 + 2 * 2.2 + 0.5, f"handover took {took:.1f} s (lease 4 s + two jittered retries)"
    controller_stack.set_queue(ns, "orders", 50)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 5, timeout=5 * SYNC, what="b scaled to 5")
    time.sleep(2 * SYNC)
    assert scale_writes(a) == 2 and scale_writes(b) == 1, "each change written exactly once"
    assert controller_stack.replicas(ns, "web") == 5


@pytest.mark.timeout(60)
def test_sigterm_releases_the_lease_so_the_standby_takes_over_at_once(controller_stack: ControllerStack,
                                                                      ns: str) -> None:
    controller_stack.set_queue(ns, "orders", 20)
    controller_stack.apply(deployment(ns, "web", replicas=1))
    controller_stack.wait_external(ns, "orders", 20)
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    a = controller_stack.controller(ns, *FAST_FLAGS, *LEASE, name="a")
    wait_until(lambda: controller_stack.replicas(ns, "web") == 2, timeout=4 * SYNC, what="a scaled to 2")
    holder = _lease_holder(controller_stack, ns)
    b = controller_stack.controller(ns, *FAST_FLAGS, *LEASE, name="b")
    time.sleep(2.5)  # b is a follower that has seen a renew
    stopping_at = time.monotonic()
    assert a.stop() == 0, a.log_tail()
    wait_until(lambda: _lease_holder(controller_stack, ns) not in ("", holder), timeout=10, interval=0.1,
               what="b holding the Lease")
    took = time.monotonic() - stopping_at
    assert took <= 2.2 + 1.5, f"takeover after SIGTERM took {took:.1f} s (one jittered 1 s retry + shutdown)"
    controller_stack.set_queue(ns, "orders", 30)
    wait_until(lambda: controller_stack.replicas(ns, "web") == 3, timeout=5 * SYNC, what="b scaled to 3")
    assert scale_writes(a) == 1 and scale_writes(b) == 1
