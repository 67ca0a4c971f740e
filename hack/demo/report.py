"""`make demo`, the autoscaling page: one self-contained HTML file with an inline SVG chart, drawn
by the product's one chart renderer (`controller.backtest.chart`, which the backtest report uses).

Input is what hack/demo/autoscale.py recorded while the controller ran: samples of the load the
demo drove, the metric as the controller last read it, the Deployment's `/scale` replicas and the
PromAutoscaler's `status.currentReplicas`/`desiredReplicas`, and the scale events (from
`status.lastDecision` and the controller's `SuccessfulRescale` Events). The page draws the metric
against its target (top panel) and the replicas (bottom panel) over time, marks each scale event
with a vertical line whose SVG `<title>` says why (a browser shows it on hover), lists the events
in a table, and embeds every sample as JSON (`<script type="application/json" id="samples">`) so
tools and tests can read the exact series.

Non-goals: interactivity beyond native tooltips, anything fetched from the network, I/O (the
caller writes the returned text). Pure.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from controller.backtest.chart import Event, Figure, Line, Note, Panel
from controller.backtest.chart import render_svg as render_chart

__all__ = ["Recording", "Sample", "ScaleEvent", "render_html"]

_METRIC_HEIGHT, _REPLICAS_HEIGHT = 200, 170
_COLORS = {"metric": "#1f77b4", "target": "#d62728", "replicas": "#2ca02c", "desired": "#ff7f0e",
           "load": "#9467bd", "up": "#2ca02c", "down": "#d62728"}

@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One reading taken while the demo ran (epoch seconds; None: could not be read)."""

    t: float
    phase: str
    load: float  # the total the demo asked the sample exporter to report across the pods
    metric: float | None  # per-pod average the controller last read (its /debug/decisions document)
    metric_time: str | None  # when the controller took that decision (RFC 3339)
    replicas: int | None  # the Deployment's /scale spec.replicas
    status_current: int | None  # PromAutoscaler status.currentReplicas
    status_desired: int | None  # PromAutoscaler status.desiredReplicas
    reason: str  # status.lastDecision.limitingReason


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleEvent:
    """One scale the controller made, as its status.lastDecision and its Event recorded it."""

    t: float
    time: str
    from_replicas: int
    to_replicas: int
    rescale_reason: str  # lastDecision.rescaleReason
    limiting_reason: str  # lastDecision.limitingReason
    limiting_message: str  # the message of the condition carrying that reason
    event_message: str = ""  # the SuccessfulRescale Event's message, when found

    @property
    def direction(self) -> str:
        return "up" if self.to_replicas > self.from_replicas else "down"

    def summary(self) -> str:
        text = f"scaled {self.direction} {self.from_replicas} -> {self.to_replicas}: {self.rescale_reason}"
        if self.limiting_reason and self.limiting_reason != "DesiredWithinRange":
            text += f" (limited: {self.limiting_reason}: {self.limiting_message})"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """Everything one demo run recorded, ready to render."""

    namespace: str
    name: str
    metric_name: str
    target: float
    mode: str
    settings: str  # e.g. "syncPeriodSeconds 3, scale-down stabilization 10 s, ..."
    started: float
    finished: float
    samples: Sequence[Sample] = field(default_factory=tuple)
    events: Sequence[ScaleEvent] = field(default_factory=tuple)

    def to_json(self) -> dict[str, object]:
        return {"namespace": self.namespace, "name": self.name, "metric": self.metric_name,
                "target": self.target, "mode": self.mode, "settings": self.settings,
                "started": self.started, "finished": self.finished,
                "samples": [asdict(s) for s in self.samples],
                "events": [{**asdict(e), "direction": e.direction} for e in self.events]}


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%H:%M:%S")


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _phases(samples: Sequence[Sample]) -> list[Note]:
    """Where each phase starts (baseline, step up, ...), with its load."""
    notes: list[Note] = []
    last = None
    for s in samples:
        if s.phase != last:
            notes.append(Note(t=s.t, text=f"{s.phase} (load {s.load:g})"))
            last = s.phase
    return notes


def _event(index: int, event: ScaleEvent) -> Event:
    title = f"{event.time}  {event.summary()}" + (f"\nEvent: {event.event_message}" if event.event_message else "")
    return Event(t=event.t, title=title, colour=_COLORS[event.direction], dot=(1, event.to_replicas),
                 label=f"{event.from_replicas}\u2192{event.to_replicas}",
                 attrs={"class": "scale-event", "data-index": str(index), "data-from": str(event.from_replicas),
                        "data-to": str(event.to_replicas), "data-direction": event.direction})


def render_svg(rec: Recording, *, load_label: str = "") -> str:
    """The chart alone, drawn by the product's chart renderer: a well-formed SVG document
    (`load_label`: also draw the load the demo drove in the metric panel, e.g. a queue's depth)."""
    t0 = rec.started
    end = t0 + max(rec.finished - t0, 1.0) * 1.06  # room for the last event's label
    times = [s.t for s in rec.samples]

    def line(key: str, label: str, values: Sequence[float | None], title: str, dash: str = "") -> Line:
        return Line(key=key, label=label, title=title, times=times, values=values, colour=_COLORS[key],
                    dash=dash, width=2, step=True)

    metric = Panel(title=f"{rec.metric_name} per pod, against its target", height=_METRIC_HEIGHT,
                   notes=_phases(rec.samples), include=[rec.target * 1.1], fmt=lambda v: f"{v:g}", lines=[
                       line("metric", "metric (per-pod average the controller read)", [s.metric for s in rec.samples],
                            "metric the controller read"),
                       *([line("load", load_label, [s.load for s in rec.samples], load_label, "2 2")]
                         if load_label else []),
                       Line(key="target", label="target", title=f"target: {rec.target:g} per pod", times=[t0, end],
                            values=[rec.target, rec.target], colour=_COLORS["target"], dash="6 4", width=2)])
    replicas = Panel(title=f"replicas of Deployment {rec.namespace}/{rec.name}", height=_REPLICAS_HEIGHT,
                     integer=True, fmt=lambda v: f"{v:g}",
                     include=[max([e.to_replicas for e in rec.events] + [1]) + 1], lines=[
                         line("replicas", "replicas (/scale spec.replicas)", [_num(s.replicas) for s in rec.samples],
                              "/scale spec.replicas"),
                         line("desired", "status.desiredReplicas", [_num(s.status_desired) for s in rec.samples],
                              "status.desiredReplicas", "4 3")])
    return render_chart(Figure(
        panels=[metric, replicas], start=t0, end=end, elapsed=True, hover=60,
        title=f"PromAutoscaler {rec.namespace}/{rec.name}: metric, target and replicas",
        caption=f"seconds since the controller started ({_clock(t0)} UTC)",
        events=[_event(i, e) for i, e in enumerate(rec.events)]))


def _num(value: int | None) -> float | None:
    return None if value is None else float(value)


def _event_rows(events: Sequence[ScaleEvent]) -> str:
    rows = [f"<tr><td>{_esc(e.time)}</td><td>{e.direction}</td><td>{e.from_replicas} &#8594; {e.to_replicas}</td>"
            f"<td>{_esc(e.rescale_reason)}</td><td>{_esc(e.limiting_reason)}: {_esc(e.limiting_message)}</td>"
            f"<td>{_esc(e.event_message)}</td></tr>" for e in events]
    return "".join(rows) or '<tr><td colspan="6">no scale events</td></tr>'


def render_html(rec: Recording, *, load_label: str = "") -> str:
    """The whole page: heading, chart, event table, embedded samples."""
    data = json.dumps(rec.to_json(), separators=(",", ":")).replace("</", "<\\/")
    title = f"prom-autoscaler demo: PromAutoscaler {rec.namespace}/{rec.name}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>body{{font-family:sans-serif;margin:24px;color:#222}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}} .note{{color:#555}}</style>
</head>
<body>
<h1>{_esc(title)}</h1>
<p class="note">{_esc(rec.mode)} mode: {_esc(rec.settings)}.
Recorded {_clock(rec.started)}&#8211;{_clock(rec.finished)} UTC,
{len(rec.samples)} samples. Replicas are what the controller wrote (the Deployment's /scale and the
PromAutoscaler's status); hover over a marked scale event to see why it happened.</p>
{render_svg(rec, load_label=load_label)}
<h2>Scale events</h2>
<table><tr><th>decided (status.lastDecision.time)</th><th>direction</th><th>replicas</th>
<th>rescale reason</th><th>limiting reason</th><th>Event</th></tr>{_event_rows(rec.events)}</table>
<script type="application/json" id="samples">{data}</script>
</body>
</html>
"""
