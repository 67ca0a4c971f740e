"""What the predictive end-to-end tests share: a daily-hour history for a second, backfilled
Prometheus (the stack's own keeps 2 h and is already running), and a predictive PromAutoscaler on
the stack's External queue metric with the controller reading that history.

The history is `queue_messages_ready{namespace, queue="orders"}` at 60 s over `DAYS` days: `low`
except for `high_seconds` a day at `high`, starting `ramp_in` seconds after `now`'s time of day.
"""

from __future__ import annotations

from typing import Any

from hack.stack.backfill import openmetrics
from hack.stack.controller_stack import ControllerProcess, ControllerStack, deployment, external_metric
from hack.stack.controller_stack import promautoscaler

from .conftest import FAST_FLAGS

DAY, STEP, DAYS = 86_400, 60, 3
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def daily_history(ns: str, *, now: float, ramp_in: float, low: float, high: float,
                  high_seconds: int = 3_600) -> str:
    """OpenMetrics text of the queue's history up to `now` (promtool backfills it)."""
    ramp_at = now + ramp_in
    end = int(now // STEP * STEP)
    samples = [(float(t), high if (t - ramp_at) % DAY < high_seconds else low)
               for t in range(end - DAYS * DAY, end + 1, STEP)]
    return openmetrics([("queue_messages_ready", {"namespace": ns, "queue": "orders"}, samples)])


def start_predictive(stack: ControllerStack, ns: str, *, history_url: str, live: float, per_pod: str,
                     flags: tuple[str, ...] = (), max_replicas: int = 12) -> ControllerProcess:
    """The queue served live at `live`, a 1-replica Deployment `web`, its PromAutoscaler at `per_pod`
    a pod with prediction Active (horizon 600 s, the whole history as lookback), and a controller
    reading history from `history_url` with the adapter's own rule file."""
    stack.set_queue(ns, "orders", live)
    stack.apply(deployment(ns, "web", replicas=1))
    stack.wait_external(ns, "orders", live)
    pas: dict[str, Any] = promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", per_pod)],
                                         max_replicas=max_replicas)
    pas["spec"]["prediction"] = {"mode": "Active", "horizonSeconds": 600, "lookbackSeconds": DAYS * DAY}
    stack.apply(pas)
    return stack.controller(ns, *FAST_FLAGS, *flags, f"--prometheus-url={history_url}",
                            f"--rules={stack.adapter.workdir / 'rules.yaml'}")
