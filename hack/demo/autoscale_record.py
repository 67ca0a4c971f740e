"""`make demo`, phase 3's recorder: drives the load, samples what the controller wrote, keeps it.

One `Recorder` per run. `spread_load` writes the app's total load as each current pod's
`http_requests_in_flight` gauge on the sample exporter (and drops the series of pods that are
gone). `sample` reads the Deployment's `/scale`, the PromAutoscaler (status, lastDecision,
conditions) and the controller's `/debug/decisions` document, keeps a `Sample`, turns each new
`lastDecision` with outcome "scaled" into a `ScaleEvent`, and returns the `Frame` the live view
shows. At the end `attach_event_messages` adds the controller's `SuccessfulRescale` Event
messages and `recording` hands everything to the HTML page.

Non-goals: deciding when a phase is over (hack/demo/autoscale.py), drawing.
"""

from __future__ import annotations

import json
import time
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hack.demo.live import Frame, Progress
from hack.demo.report import Recording, Sample, ScaleEvent
from hack.stack.sample_exporter import SampleExporter
from kubecommon.kubetime import parse_time
from kubecommon.quantity import Quantity, QuantityError


__all__ = ["Recorder"]

#: what one added pod of the demo app measures (the app's pods in phase 2: 0.2 cores, 110 MiB)
POD_CPU_CORES, POD_MEMORY_BYTES = 0.2, 110 * 2**20
DEFAULT_NODE = "node-a"
_PAS_API = "/apis/autoscaling.prom-autoscaler.io/v1alpha1"


def _epoch(text: str) -> float:
    return parse_time(text)  # metav1.Time as the API server wrote it


def _quantity(text: object) -> float | None:
    try:
        return Quantity.parse(str(text)).as_float()
    except (QuantityError, ValueError):
        return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def reason_line(status: Mapping[str, Any], decision: Mapping[str, Any]) -> str:
    """'<limitingReason>: <message of the condition carrying it>' as the controller wrote them."""
    reason = str(decision.get("limitingReason") or "")
    if not reason:
        return "no decision yet"
    message = next((str(c.get("message") or "") for c in status.get("conditions") or ()
                    if isinstance(c, Mapping) and c.get("reason") == reason), "")
    return f"{reason}: {message}" if message else reason


class Cluster:
    """Reads from the stand-in over HTTPS as its admin (cheaper than a kubectl per sample)."""

    def __init__(self, url: str, token: str, ca_pem: bytes) -> None:
        self._url = url.rstrip("/")
        self._token = token
        self._tls = ssl.create_default_context(cadata=ca_pem.decode())

    def get(self, path: str) -> dict[str, Any] | None:
        request = urllib.request.Request(self._url + path, headers={"Authorization": f"Bearer {self._token}"})
        try:
            with urllib.request.urlopen(request, timeout=5, context=self._tls) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, ValueError, urllib.error.HTTPError):
            return None



@dataclass(slots=True, kw_only=True)
class Recorder:
    """The state of one run (mutable on purpose: it accumulates samples)."""

    cluster: Cluster
    exporter: SampleExporter
    namespace: str
    name: str
    metric: str
    target: float
    window: int
    up_period: int
    controller_get: Callable[[str], str | None] | None = None  # GET on the controller's metrics port
    load: float = 0.0
    phase: str = "starting"
    pods: set[str] = field(default_factory=set)
    nodes: dict[str, str] = field(default_factory=dict)  # pod -> the node it runs on
    samples: list[Sample] = field(default_factory=list)
    events: list[ScaleEvent] = field(default_factory=list)
    started: float = 0.0
    _reported: int = 0
    _stabilized_since: float | None = None
    _status: dict[str, Any] = field(default_factory=dict)
    _decision: dict[str, Any] = field(default_factory=dict)
    _replicas: int | None = None
    _decisions: list[str] = field(default_factory=list)  # distinct decision times seen, in order

    # --- the app ------------------------------------------------------------------------------------
    def replicas_now(self) -> int | None:
        scale = self.cluster.get(f"/apis/apps/v1/namespaces/{self.namespace}/deployments/{self.name}/scale")
        return None if scale is None else _int((scale.get("spec") or {}).get("replicas", 0))

    def pod_names(self) -> list[str]:
        return sorted(self._pod_nodes())

    def _pod_nodes(self) -> dict[str, str]:
        """The app's pods that are not being deleted, and the node each runs on."""
        doc = self.cluster.get(f"/api/v1/namespaces/{self.namespace}/pods?labelSelector=app%3D{self.name}") or {}
        return {str(p["metadata"]["name"]): str((p.get("spec") or {}).get("nodeName") or "")
                for p in doc.get("items") or [] if not p["metadata"].get("deletionTimestamp")}

    def spread_load(self) -> None:
        """The load over the current pods; a pod the controller added also gets cAdvisor's CPU and
        memory series, so `kubectl top pod` shows it (as the kubelet would measure it)."""
        nodes = self._pod_nodes()
        labels = {"namespace": self.namespace, "service": self.name}
        for gone in self.pods - set(nodes):
            self.exporter.remove(self.metric, {**labels, "pod": gone})
            for series in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes"):
                self.exporter.remove(series, self._container(gone, self.nodes.get(gone, "")))
        for pod, node in nodes.items():
            self.exporter.set_gauge(self.metric, {**labels, "pod": pod}, self.load / len(nodes))
            container = self._container(pod, node)
            if not self.exporter.has("container_memory_working_set_bytes", container):
                self.exporter.set_counter("container_cpu_usage_seconds_total", container, rate=POD_CPU_CORES)
                self.exporter.set_gauge("container_memory_working_set_bytes", container, POD_MEMORY_BYTES)
        self.pods, self.nodes = set(nodes), nodes

    def _container(self, pod: str, node: str) -> dict[str, str]:
        """cAdvisor's labels for the app container (the demo's phase 2 exports the same)."""
        return {"namespace": self.namespace, "pod": pod, "container": "app", "node": node or DEFAULT_NODE}

    def set_phase(self, phase: str, load: float) -> None:
        self.phase, self.load = phase, load
        self._stabilized_since = None

    def begin(self) -> None:
        self.started = time.time()

    # --- reading the controller ---------------------------------------------------------------------
    def _debug(self) -> dict[str, Any]:
        if self.controller_get is None:
            return {}
        body = self.controller_get(f"/debug/decisions/pas/{self.namespace}/{self.name}")
        try:
            return dict(json.loads(body)) if body else {}
        except ValueError:
            return {}

    def _read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self._replicas = self.replicas_now()
        obj = self.cluster.get(f"{_PAS_API}/namespaces/{self.namespace}/promautoscalers/{self.name}") or {}
        self._status = dict(obj.get("status") or {})
        self._decision = dict(self._status.get("lastDecision") or {})
        debug = self._debug()
        latest = dict(debug.get("lastDecision") or self._decision)
        conditions = {"conditions": debug.get("conditions") or self._status.get("conditions") or []}
        return latest, conditions

    def sample(self) -> Frame:
        latest, conditions = self._read()
        now = time.time()
        metrics = latest.get("metrics") or [{}]
        metric = _quantity(metrics[0].get("value")) if "value" in metrics[0] else None
        reason = reason_line(conditions, latest)
        self.samples.append(Sample(
            t=now, phase=self.phase, load=self.load, metric=metric, metric_time=latest.get("time"),
            replicas=self._replicas, status_current=_int(self._status.get("currentReplicas")),
            status_desired=_int(self._status.get("desiredReplicas")),
            reason=str(self._decision.get("limitingReason") or "")))
        self._record_event(now)
        self._track_window(latest, now)
        return Frame(elapsed=now - self.started, phase=self.phase, load=self.load, metric=metric,
                     target=self.target, metric_name=self.metric, replicas=self._replicas,
                     desired=_int(latest.get("desiredReplicas")), reason=reason, decided=latest.get("time"),
                     progress=self._progress(str(latest.get("limitingReason") or ""), now))

    def _track_window(self, latest: Mapping[str, Any], now: float) -> None:
        """The stabilization window runs from the last decision that still recommended more."""
        decided = str(latest.get("time") or "")
        if decided and decided not in self._decisions:
            self._decisions.append(decided)
        if latest.get("limitingReason") != "ScaleDownStabilized":
            self._stabilized_since = None
        elif self._stabilized_since is None:
            before = self._decisions[-2] if len(self._decisions) > 1 else None
            self._stabilized_since = _epoch(before) if before else now

    def _progress(self, reason: str, now: float) -> Progress | None:
        if reason == "ScaleDownStabilized" and self._stabilized_since is not None:
            return Progress(label="scale-down stabilization window", elapsed=now - self._stabilized_since,
                            total=self.window)
        ups = [e for e in self.events if e.direction == "up"]
        if reason == "ScaleUpLimit" and ups:
            return Progress(label="scale-up rate-limit period", elapsed=now - ups[-1].t, total=self.up_period)
        return None

    def _record_event(self, seen: float) -> None:
        d = self._decision
        if d.get("outcome") != "scaled" or not d.get("time"):
            return
        key = (str(d["time"]), _int(d.get("currentReplicas")), _int(d.get("desiredReplicas")))
        if any((e.time, e.from_replicas, e.to_replicas) == key for e in self.events):
            return
        limiting = str(d.get("limitingReason") or "")
        self.events.append(ScaleEvent(  # drawn when first seen: the decision time is whole seconds
            t=max(seen, _epoch(key[0])), time=key[0], from_replicas=key[1] or 0, to_replicas=key[2] or 0,
            rescale_reason=str(d.get("rescaleReason") or ""), limiting_reason=limiting,
            limiting_message=reason_line(self._status, d).partition(": ")[2]))

    def new_events(self) -> list[ScaleEvent]:
        fresh = self.events[self._reported:]
        self._reported = len(self.events)
        return fresh

    # --- phase conditions ---------------------------------------------------------------------------
    def decided(self) -> bool:
        return bool(self._decision.get("time"))

    def settled_above(self, replicas: int) -> bool:
        """Scaled above `replicas`, and the controller's last decision keeps the count it has."""
        s, d = self._status, self._decision
        have = self._replicas
        return have is not None and have > replicas and s.get("currentReplicas") == have and \
            s.get("desiredReplicas") == have and d.get("limitingReason") == "DesiredWithinRange"

    def scaled_down_to(self, replicas: int) -> bool:
        return self._replicas == replicas and any(e.direction == "down" and e.to_replicas == replicas
                                                  for e in self.events)

    def describe(self) -> str:
        d = self._decision
        return (f"replicas {self._replicas}, status {self._status.get('currentReplicas')} -> "
                f"{self._status.get('desiredReplicas')}, last decision {d.get('time')}: {d.get('outcome')} "
                f"{d.get('limitingReason')}")

    def tail(self, *, seconds: float) -> None:
        """A few more samples after the controller stopped (the replicas settle on the chart)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.sample()
            time.sleep(0.25)

    # --- the record ---------------------------------------------------------------------------------
    def attach_event_messages(self) -> None:
        """Add each scale's SuccessfulRescale Event message (matched by new size, in order)."""
        doc = self.cluster.get(f"/api/v1/namespaces/{self.namespace}/events") or {}
        found = sorted((str(e.get("lastTimestamp") or e.get("eventTime") or ""), str(e.get("message") or ""))
                        for e in doc.get("items") or []
                        if e.get("reason") == "SuccessfulRescale"
                        and (e.get("involvedObject") or {}).get("name") == self.name
                        and (e.get("involvedObject") or {}).get("kind") == "PromAutoscaler")
        messages = [m for _, m in found]
        zero = self._zero_messages()
        updated = []
        for event in self.events:
            match = next((m for m in messages if m.startswith(f"New size: {event.to_replicas};")), "")
            if match:
                messages.remove(match)
            key = "ScaledToZero" if event.to_replicas == 0 else "WokenFromZero" if event.from_replicas == 0 else ""
            if zero.get(key):
                match = "; ".join(filter(None, (match, f"{key}: {zero[key].pop(0)}")))
            updated.append(replace(event, event_message=match))
        self.events = updated

    def _zero_messages(self) -> dict[str, list[str]]:
        """The messages of the controller's ScaledToZero and WokenFromZero Events, oldest first."""
        doc = self.cluster.get(f"/api/v1/namespaces/{self.namespace}/events") or {}
        found: dict[str, list[tuple[str, str]]] = {"ScaledToZero": [], "WokenFromZero": []}
        for e in doc.get("items") or []:
            if e.get("reason") in found and (e.get("involvedObject") or {}).get("name") == self.name:
                found[str(e["reason"])].append((str(e.get("lastTimestamp") or e.get("eventTime") or ""),
                                                str(e.get("message") or "")))
        return {k: [m for _, m in sorted(v)] for k, v in found.items()}

    def recording(self, *, mode: str, settings: str) -> Recording:
        return Recording(namespace=self.namespace, name=self.name, metric_name=self.metric, target=self.target,
                         mode=mode, settings=settings, started=self.started,
                         finished=self.samples[-1].t if self.samples else time.time(),
                         samples=tuple(self.samples), events=tuple(self.events))
