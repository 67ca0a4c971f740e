"""`make demo DEMO_ARGS=--zero`, phase 3 as scale to zero: a queue worker idles at 0 and wakes on a burst.

Creates the Deployment shop/worker and a PromAutoscaler on it with `minReplicas: 0`, an External
metric (`queue_messages_ready{queue="orders"}`, the sample exporter's gauge, served by the adapter)
at 10 messages per pod and `scaleToZero.cooldownSeconds` of a few seconds, starts the real
controller and drives the queue: busy (15 messages: 2 workers), empty (0: after the stabilization
window and the cooldown the controller scales to 0, Event ScaledToZero) and a burst (35 messages:
0 -> 4 in one step, Event WokenFromZero). It reuses phase 3's recorder, live view and page
(hack/demo/autoscale_record.py, live.py, report.py): the page's replicas chart hits 0 and comes back,
each scale event is marked with the controller's Event messages, and the queue depth is drawn.

Non-goals: starting the stack (hack/demo/cli.py or a test does), asserting (the tests do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO


from hack.demo.autoscale import _wait_phase, apply_and_start, backend_name, end_phase, explain_phase
from hack.demo.autoscale_record import Cluster, Recorder
from hack.demo.live import LiveView
from hack.demo.report import render_html
from hack.stack.controller_stack import ControllerProcess, ControllerStack, deployment, external_metric
from hack.stack.controller_stack import promautoscaler, wait_until
from kubecommon.quantity import Quantity

__all__ = ["ZERO", "QueueRecorder", "ZeroScenario", "run_zero"]

METRIC, QUEUE = "queue_messages_ready", "orders"


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroScenario:
    """Windows and queue depths of one scale-to-zero run."""

    sync_seconds: int = 3
    downscale_window: int = 6
    cooldown: int = 5
    target: float = 10.0  # messages per worker
    busy: float = 15.0  # ceil(15 / 10) = 2 workers, as created
    burst: float = 35.0  # ceil(35 / 10) = 4: 0 -> 4 in one step (the default scale-up allows +4)
    max_replicas: int = 8

    def settings(self) -> str:
        return (f"External {METRIC}{{queue={QUEUE}}} at {self.target:g} per pod, minReplicas 0, "
                f"scaleToZero.cooldownSeconds {self.cooldown}, syncPeriodSeconds {self.sync_seconds}, "
                f"scale-down stabilization window {self.downscale_window} s")


ZERO = ZeroScenario()


@dataclass(slots=True, kw_only=True)
class QueueRecorder(Recorder):
    """Phase 3's recorder whose load is the queue's depth (one gauge), not a per-pod spread."""

    queue: str = QUEUE

    def spread_load(self) -> None:
        self.exporter.set_gauge(METRIC, {"namespace": self.namespace, "queue": self.queue}, self.load)
        self.pods = set(self.pod_names())


def _woken(rec: Recorder) -> bool:
    return bool(rec.replicas_now()) and any(e.from_replicas == 0 and e.to_replicas > 0 for e in rec.events)


def _served_queue(rec: Recorder, value: float) -> bool:
    rec.spread_load()
    doc = rec.cluster.get(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{rec.namespace}/{METRIC}"
                          f"?labelSelector=queue%3D{QUEUE}") or {}
    items = doc.get("items") or []
    return bool(items) and Quantity.parse(str(items[0].get("value"))).as_float() == value


def _start(stack: ControllerStack, rec: QueueRecorder, scenario: ZeroScenario, out: TextIO) -> ControllerProcess:
    ns, name = rec.namespace, rec.name
    stack.create_namespace(ns)
    stack.apply(deployment(ns, name, replicas=2))
    rec.load = scenario.busy
    wait_until(lambda: len(rec.pod_names()) == 2, timeout=30, what=f"2 pods of {ns}/{name}")
    wait_until(lambda: _served_queue(rec, scenario.busy), timeout=45, interval=0.5,
               what=f"the adapter serving {METRIC}={scenario.busy:g}")
    pas: dict[str, Any] = promautoscaler(
        ns, name, target={"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        metrics=[external_metric(QUEUE, f"{scenario.target:g}")], min_replicas=0, max_replicas=scenario.max_replicas,
        sync_period=scenario.sync_seconds,
        behavior={"scaleDown": {"stabilizationWindowSeconds": scenario.downscale_window}})
    pas["spec"]["scaleToZero"] = {"cooldownSeconds": scenario.cooldown}
    return apply_and_start(stack, pas, sync_seconds=scenario.sync_seconds, out=out)


def run_zero(stack: ControllerStack, *, scenario: ZeroScenario = ZERO, out: TextIO, tty: bool, report: Path,
             namespace: str = "shop", name: str = "worker", keep_controller: bool = False) -> int:
    """0 when the worker went to 0 and woke in one step, and the page was written."""
    cluster = Cluster(stack.standin.url, stack.token, stack.ca_pem)
    rec = QueueRecorder(cluster=cluster, exporter=stack.exporter, namespace=namespace, name=name, metric=METRIC,
                        target=scenario.target, window=scenario.downscale_window, up_period=15)
    out.write(f"PromAutoscaler {namespace}/{name}: {scenario.settings()}.\n")
    ctl = _start(stack, rec, scenario, out)
    rec.controller_get = ctl.get
    rec.begin()
    view = LiveView(out, tty=tty)
    sync = scenario.sync_seconds
    code = 0
    try:
        _wait_phase(rec, view, phase="busy", load=scenario.busy, done=rec.decided, timeout=30 + 3 * sync, hold=sync)
        _wait_phase(rec, view, phase="queue empty", load=0.0, done=lambda: rec.scaled_down_to(0), hold=2 * sync,
                    timeout=scenario.downscale_window + scenario.cooldown + 6 * sync + 20)
        _wait_phase(rec, view, phase="burst", load=scenario.burst, done=lambda: _woken(rec), hold=sync,
                    timeout=6 * sync + 20)
    except TimeoutError as err:
        view.note(f"\nscale-to-zero phase failed: {err}\n--- controller log ---\n{ctl.log_tail(40)}")
        code = 1
    finally:
        end_phase(rec, view, ctl, keep_controller=keep_controller)
    code = max(code, explain_phase(stack, rec, out))
    recording = rec.recording(mode="scale to zero",
                              settings=f"{scenario.settings()}; metrics from {backend_name(stack)}")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render_html(recording, load_label=f"messages in queue {QUEUE} (what the demo set)"))
    zeros = sum(e.to_replicas == 0 for e in recording.events)
    wakes = sum(e.from_replicas == 0 for e in recording.events)
    out.write(f"\nHTML report ({len(recording.samples)} samples, {zeros} scale(s) to 0 and {wakes} wake(s) "
              f"from 0): {report}\n")
    out.flush()
    return code if zeros and wakes else 1
