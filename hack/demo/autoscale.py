"""`make demo`, phase 3: the controller closes the loop on the sample app.

Creates a PromAutoscaler on the Deployment shop/web (run by the stand-in's workload simulator) with
a Pods metric, `http_requests_in_flight` per pod against an AverageValue target, served by the
adapter through the aggregation layer from the sample exporter's gauges. It starts the real
controller (`python -m controller run`, hack.stack.controller_stack), then drives the app's load: a
baseline, a step up and a step down. The load is a total the demo spreads over the Deployment's
current pods (each pod's gauge is total / pods), so the per-pod metric falls as the controller adds
replicas, as it would for a real app behind a load balancer.

While it runs it samples, twice a second, what the controller wrote (the Deployment's `/scale`, the
PromAutoscaler's status and `lastDecision`) and what it last read (its `/debug/decisions` document),
shows them live (hack.demo.live), prints each scale with its reason, stops the controller once it
has scaled back down (so that decision stays the last), prints `prom-autoscaler-controller explain`
for it, and writes the HTML page (hack.demo.report).

Non-goals: starting the stack (hack/demo/served.py or a test does), asserting (the tests do).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from hack.kube_standin.kubeconfig import token_and_ca
from hack.stack import metrics_stack
from hack.stack.controller_stack import (
    CRD_FILE,
    PLURAL,
    ControllerProcess,
    ControllerStack,
    deployment,
    promautoscaler,
    wait_until,
)
from hack.demo.autoscale_record import Cluster, Recorder
from hack.demo.live import LiveView
from hack.demo.report import Recording, render_html
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.local_victoria_metrics import LocalVictoriaMetrics
from hack.stack.sample_exporter import SampleExporter
from kubecommon.quantity import Quantity

__all__ = ["DEFAULT", "FAST", "Cluster", "Scenario", "attach_stack", "backend_name", "controller_flags",
           "run_autoscale"]

METRIC = "http_requests_in_flight"
PAS_API = "/apis/autoscaling.prom-autoscaler.io/v1alpha1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """The windows and the load of one run (loads are totals across the app's pods)."""

    mode: str
    sync_seconds: int
    downscale_window: int
    scale_up_period: int
    target: float = 10.0
    peak_total: float = 95.0  # from 4 pods: 8 (the rate limit), then ceil(95 / 10) = 10
    baseline_per_pod: float = 9.5  # within the 10% tolerance of the target: the start count holds
    min_replicas: int = 1
    max_replicas: int = 12

    def settings(self) -> str:
        return (f"syncPeriodSeconds {self.sync_seconds}, scale-down stabilization window "
                f"{self.downscale_window} s, scale-up at most +4 pods or +100% per {self.scale_up_period} s")

    def behavior(self) -> dict[str, Any]:
        policies = [{"type": "Pods", "value": 4, "periodSeconds": self.scale_up_period},
                    {"type": "Percent", "value": 100, "periodSeconds": self.scale_up_period}]
        return {"scaleDown": {"stabilizationWindowSeconds": self.downscale_window},
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": policies}}


FAST = Scenario(mode="fast", sync_seconds=3, downscale_window=10, scale_up_period=9)
DEFAULT = Scenario(mode="default", sync_seconds=5, downscale_window=30, scale_up_period=15)


def attach_stack(workdir: Path, exporter: SampleExporter, prometheus: LocalPrometheus,
                 standin: metrics_stack.StandIn, adapter: metrics_stack.AdapterProcess) -> ControllerStack:
    """A ControllerStack over phase 2's running pieces: applies the CRD from the chart."""
    standin.kubectl("apply", "-f", str(CRD_FILE))
    wait_until(lambda: standin.kubectl("get", PLURAL, "-A", check=False).returncode == 0, timeout=30,
               what="the PromAutoscaler CRD served")
    token, ca_pem = token_and_ca(standin.kubeconfig)
    return ControllerStack(workdir=workdir, exporter=exporter, prometheus=prometheus, standin=standin,
                           adapter=adapter, token=token, ca_pem=ca_pem)


def _pods_metric(target: float) -> dict[str, Any]:
    return {"type": "Pods", "pods": {"metric": {"name": METRIC},
                                     "target": {"type": "AverageValue", "averageValue": f"{target:g}"}}}


def _served_values(cluster: Cluster, namespace: str, name: str) -> list[float]:
    doc = cluster.get(f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/pods/*/{METRIC}"
                      f"?labelSelector=app%3D{name}") or {}
    return [Quantity.parse(str(i["value"])).as_float() for i in doc.get("items") or []]


def _prepare(stack: ControllerStack, rec: Recorder, scenario: Scenario) -> int:
    """The app exists with Running pods, and the adapter serves the baseline for each; returns the
    starting replica count."""
    ns, name = rec.namespace, rec.name
    if stack.get("deployments.apps", ns, name) is None:
        stack.create_namespace(ns)
        stack.apply(deployment(ns, name, replicas=2))
    start = wait_until(lambda: rec.replicas_now(), timeout=30, what=f"deployment {ns}/{name}")
    wait_until(lambda: len(rec.pod_names()) == start, timeout=30, what=f"{start} pods of {ns}/{name}")
    rec.load = start * scenario.baseline_per_pod
    rec.spread_load()
    per_pod = scenario.baseline_per_pod

    def baseline_served() -> bool:
        rec.spread_load()
        values = _served_values(rec.cluster, ns, name)
        return len(values) == start and all(abs(v - per_pod) < 0.01 for v in values)

    wait_until(baseline_served, timeout=45, interval=0.5, what="the adapter serving the baseline load per pod")
    return int(start)


def backend_name(stack: ControllerStack) -> str:
    """The metrics backend the adapter and the controller read, as the page names it."""
    return "VictoriaMetrics" if isinstance(stack.prometheus, LocalVictoriaMetrics) else "Prometheus"


def controller_flags(stack: ControllerStack) -> tuple[str, ...]:
    """The demo controller's flags: no leader election, and the metrics backend the adapter reads
    (Prometheus or VictoriaMetrics) with the adapter's rule file, as a deployment would pass them."""
    return ("--leader-elect=false", f"--prometheus-url={stack.prometheus.url}",
            f"--rules={stack.adapter.workdir / 'rules.yaml'}")


def _start_controller(stack: ControllerStack, rec: Recorder, scenario: Scenario, out: TextIO) -> ControllerProcess:
    ns, name = rec.namespace, rec.name
    pas = promautoscaler(ns, name, target={"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                         metrics=[_pods_metric(scenario.target)], min_replicas=scenario.min_replicas,
                         max_replicas=scenario.max_replicas, sync_period=scenario.sync_seconds,
                         behavior=scenario.behavior())
    return apply_and_start(stack, pas, sync_seconds=scenario.sync_seconds, out=out)


def apply_and_start(stack: ControllerStack, pas: dict[str, Any], *, sync_seconds: int, out: TextIO
                    ) -> ControllerProcess:
    """Apply the PromAutoscaler and start the controller for its namespace, printing both as commands."""
    ns = pas["metadata"]["namespace"]
    out.write(f"\n$ kubectl apply -f - <<EOF\n{yaml.safe_dump(pas, sort_keys=False)}EOF\n")
    stack.apply(pas)
    flags = (f"--sync-period={sync_seconds}s", *controller_flags(stack))
    ctl = stack.controller(ns, *flags)
    out.write(f"$ prom-autoscaler-controller run --watch-namespace={ns} {' '.join(flags)}   "
              f"(pid {ctl.proc.pid if ctl.proc else '?'}, log {ctl.log_file})\n\n")
    out.flush()
    return ctl


def end_phase(rec: Recorder, view: LiveView, ctl: ControllerProcess, *, keep_controller: bool) -> None:
    """After the driven phase, however it ended: the live view closed, the controller stopped unless
    kept (its last decision stays the one explained), the last samples recorded."""
    view.close()
    if not keep_controller:
        ctl.stop()
    rec.tail(seconds=1.0)


def explain_phase(stack: ControllerStack, rec: Recorder, out: TextIO) -> int:
    """The scale events' messages attached to the recording, and `explain` printed; 1 when it failed."""
    rec.attach_event_messages()
    return 1 if _explain(stack, rec.namespace, rec.name, out) != 0 else 0


def _wait_phase(rec: Recorder, view: LiveView, *, phase: str, load: float, done: Callable[[], bool],
                timeout: float, hold: float = 0.0, interval: float = 0.5) -> None:
    """Drive `load` and sample until `done()` (then `hold` more seconds); TimeoutError otherwise."""
    rec.set_phase(phase, load)
    view.note(f"-- {phase}: the app's load is now {load:g} requests in flight "
              f"({load / max(len(rec.pods), 1):.2f} per pod over {len(rec.pods)} pods before scaling)")
    deadline = time.monotonic() + timeout
    finished_at: float | None = None
    while True:
        rec.spread_load()
        view.show(rec.sample())
        for event in rec.new_events():
            view.note(f"   {event.time}  {event.summary()}")
        now = time.monotonic()
        if finished_at is None and done():
            finished_at = now
        if finished_at is not None and now - finished_at >= hold:
            return
        if now > deadline:
            raise TimeoutError(f"{phase}: not done after {timeout:g}s ({rec.describe()})")
        time.sleep(interval)


def _drive(rec: Recorder, view: LiveView, scenario: Scenario, start: int) -> None:
    sync = scenario.sync_seconds
    baseline = start * scenario.baseline_per_pod
    _wait_phase(rec, view, phase="baseline", load=baseline, done=rec.decided, timeout=30 + 3 * sync, hold=sync)
    _wait_phase(rec, view, phase="step up", load=scenario.peak_total, hold=sync,
                done=lambda: rec.settled_above(start), timeout=3 * scenario.scale_up_period + 6 * sync + 30)
    _wait_phase(rec, view, phase="step down", load=baseline, done=lambda: rec.scaled_down_to(start),
                timeout=scenario.downscale_window + 6 * sync + 30)


def _explain(stack: ControllerStack, namespace: str, name: str, out: TextIO) -> int:
    binary = Path(sys.executable).parent / "prom-autoscaler-controller"
    command = [str(binary)] if binary.exists() else [sys.executable, "-m", "controller"]
    out.write(f"\n$ prom-autoscaler-controller explain {namespace}/{name}\n")
    out.flush()
    result = subprocess.run([*command, "explain", f"{namespace}/{name}"], capture_output=True, text=True,
                            env=stack.standin.env(), timeout=60, check=False)
    out.write(result.stdout + result.stderr)
    return result.returncode


def run_autoscale(stack: ControllerStack, *, scenario: Scenario, out: TextIO, tty: bool, report: Path,
                  namespace: str = "shop", name: str = "web", keep_controller: bool = False) -> int:
    """Phase 3 end to end; 0 when the controller scaled up and back down and the page was written."""
    cluster = Cluster(stack.standin.url, stack.token, stack.ca_pem)
    rec = Recorder(cluster=cluster, exporter=stack.exporter, namespace=namespace, name=name, metric=METRIC,
                   target=scenario.target, window=scenario.downscale_window, up_period=scenario.scale_up_period)
    out.write(f"PromAutoscaler {namespace}/{name}: Pods metric {METRIC}, target averageValue "
              f"{scenario.target:g} per pod; {scenario.mode} mode: {scenario.settings()}.\n")
    start = _prepare(stack, rec, scenario)
    ctl = _start_controller(stack, rec, scenario, out)
    rec.controller_get = ctl.get
    rec.begin()
    view = LiveView(out, tty=tty)
    code = 0
    try:
        _drive(rec, view, scenario, start)
    except TimeoutError as err:
        view.note(f"\nautoscale phase failed: {err}\n--- controller log ---\n{ctl.log_tail(40)}")
        code = 1
    finally:
        end_phase(rec, view, ctl, keep_controller=keep_controller)
    code = max(code, explain_phase(stack, rec, out))
    recording: Recording = rec.recording(mode=scenario.mode,
                                         settings=f"{scenario.settings()}; metrics from {backend_name(stack)}")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render_html(recording))
    ups = sum(e.direction == "up" for e in recording.events)
    downs = len(recording.events) - ups
    out.write(f"\nHTML report ({len(recording.samples)} samples, {ups} scale-up and {downs} scale-down "
              f"events): {report}\n")
    out.flush()
    return code if ups and downs else 1

