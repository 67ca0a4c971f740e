"""`make demo`, the autoscaling page: one self-contained HTML file with an inline SVG chart.

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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

__all__ = ["Recording", "Sample", "ScaleEvent", "render_html"]

_WIDTH, _LEFT, _RIGHT = 960, 64, 24
_METRIC_TOP, _METRIC_HEIGHT = 40, 200
_REPLICAS_TOP, _REPLICAS_HEIGHT = 300, 170
_HEIGHT = _REPLICAS_TOP + _REPLICAS_HEIGHT + 50
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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Axes:
    t0: float
    span: float
    top: float
    height: float
    y_max: float

    def x(self, t: float) -> float:
        return round(_LEFT + (t - self.t0) / self.span * (_WIDTH - _LEFT - _RIGHT), 1)

    def y(self, value: float) -> float:
        return round(self.top + self.height - value / self.y_max * self.height, 1)


def _steps(points: Sequence[tuple[float, float | None]], axes: _Axes) -> list[str]:
    """Step polylines (a value holds until the next sample); a None breaks the line."""
    lines: list[str] = []
    current: list[str] = []
    last: float | None = None
    for t, value in points:
        if value is None:
            if len(current) > 1:
                lines.append(" ".join(current))
            current, last = [], None
            continue
        if last is not None and value != last:
            current.append(f"{axes.x(t)},{axes.y(last)}")
        current.append(f"{axes.x(t)},{axes.y(value)}")
        last = value
    if len(current) > 1:
        lines.append(" ".join(current))
    return lines


def _series(name: str, label: str, points: Sequence[tuple[float, float | None]], axes: _Axes,
            *, dash: str = "") -> str:
    style = f' stroke-dasharray="{dash}"' if dash else ""
    return "".join(f'<polyline data-series="{name}" points="{pts}" fill="none" stroke="{_COLORS[name]}" '
                   f'stroke-width="2"{style}><title>{_esc(label)}</title></polyline>'
                   for pts in _steps(points, axes))


def _grid(axes: _Axes, ticks: Sequence[float], fmt: Callable[[float], str], title: str) -> str:
    parts = [f'<text x="{_LEFT}" y="{axes.top - 10}" font-weight="bold">{_esc(title)}</text>']
    for value in ticks:
        y = axes.y(value)
        parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y}" y2="{y}" stroke="#e5e5e5"/>'
                     f'<text x="{_LEFT - 6}" y="{y + 4}" text-anchor="end">{_esc(fmt(value))}</text>')
    parts.append(f'<rect x="{_LEFT}" y="{axes.top}" width="{_WIDTH - _LEFT - _RIGHT}" height="{axes.height}" '
                 'fill="none" stroke="#999"/>')
    return "".join(parts)


def _ticks(y_max: float, count: int = 5) -> list[float]:
    step = max(1.0, round(y_max / count))
    return [i * step for i in range(int(y_max // step) + 1)]


def _time_axis(axes: _Axes, bottom: float) -> str:
    step = 10 if axes.span <= 150 else 30
    parts = []
    for second in range(0, int(axes.span) + 1, step):
        x = axes.x(axes.t0 + second)
        parts.append(f'<line x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 5}" stroke="#999"/>'
                     f'<text x="{x}" y="{bottom + 18}" text-anchor="middle">{second}s</text>')
    parts.append(f'<text x="{_WIDTH - _RIGHT}" y="{bottom + 36}" text-anchor="end">seconds since the '
                 f'controller started ({_clock(axes.t0)} UTC)</text>')
    return "".join(parts)


def _markers(events: Sequence[ScaleEvent], metric: _Axes, replicas: _Axes) -> str:
    parts = []
    for index, event in enumerate(events):
        x, color = metric.x(event.t), _COLORS[event.direction]
        title = _esc(f"{event.time}  {event.summary()}" + (f"\nEvent: {event.event_message}"
                                                             if event.event_message else ""))
        parts.append(f'<g class="scale-event" data-index="{index}" data-from="{event.from_replicas}" '
                     f'data-to="{event.to_replicas}" data-direction="{event.direction}"><title>{title}</title>'
                     f'<line x1="{x}" x2="{x}" y1="{metric.top}" y2="{replicas.top + replicas.height}" '
                     f'stroke="{color}" stroke-width="6" stroke-opacity="0.15"/>'
                     f'<line x1="{x}" x2="{x}" y1="{metric.top}" y2="{replicas.top + replicas.height}" '
                     f'stroke="{color}" stroke-dasharray="2 3"/>'
                     f'<circle cx="{x}" cy="{replicas.y(event.to_replicas)}" r="6" fill="{color}"/>'
                     f'<text x="{x + 8}" y="{replicas.y(event.to_replicas) - 8}" fill="{color}">'
                     f'{event.from_replicas}&#8594;{event.to_replicas}</text></g>')
    return "".join(parts)


def _phases(samples: Sequence[Sample], axes: _Axes) -> str:
    """A faint line and the phase's name (baseline, step up, ...) where each phase starts."""
    parts: list[str] = []
    last = None
    for s in samples:
        if s.phase != last:
            x, row = axes.x(s.t), len(parts) % 2  # alternate rows: a short phase's name fits
            parts.append(f'<g class="phase"><line x1="{x}" x2="{x}" y1="{axes.top}" y2="{axes.top + axes.height}" '
                         f'stroke="#bbb"/><text x="{x + 4}" y="{axes.top + 14 + 14 * row}" fill="#777">'
                         f'{_esc(s.phase)} (load {s.load:g})</text></g>')
            last = s.phase
    return "".join(parts)


def _legend(y: float) -> str:
    items = (("metric", "metric (per-pod average the controller read)", ""), ("target", "target", "6 4"),
             ("replicas", "replicas (/scale spec.replicas)", ""),
             ("desired", "status.desiredReplicas", "4 3"))
    parts, x = [], _LEFT
    for name, label, dash in items:
        style = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{_COLORS[name]}" '
                     f'stroke-width="2"{style}/><text x="{x + 30}" y="{y + 4}">{_esc(label)}</text>')
        x += 34 + 7 * len(label)
    return "".join(parts)


def render_svg(rec: Recording) -> str:
    """The chart alone: a well-formed SVG document (xml.etree parses it)."""
    t0 = rec.started
    span = max(rec.finished - t0, 1.0) * 1.06  # room for the last event's label
    metric_max = max([s.metric for s in rec.samples if s.metric is not None] + [rec.target]) * 1.15
    replicas_max = max([s.replicas or 0 for s in rec.samples] + [s.status_desired or 0 for s in rec.samples]
                       + [e.to_replicas for e in rec.events] + [1]) + 1
    m = _Axes(t0=t0, span=span, top=_METRIC_TOP, height=_METRIC_HEIGHT, y_max=metric_max)
    r = _Axes(t0=t0, span=span, top=_REPLICAS_TOP, height=_REPLICAS_HEIGHT, y_max=replicas_max)
    body = [
        _legend(14),
        _grid(m, _ticks(metric_max), lambda v: f"{v:g}", f"{rec.metric_name} per pod, against its target"),
        _series("target", f"target: {rec.target:g} per pod", [(t0, rec.target), (t0 + span, rec.target)], m,
                dash="6 4"),
        _phases(rec.samples, m),
        _series("metric", "metric the controller read", [(s.t, s.metric) for s in rec.samples], m),
        _grid(r, _ticks(replicas_max), lambda v: f"{v:g}", f"replicas of Deployment {rec.namespace}/{rec.name}"),
        _series("desired", "status.desiredReplicas", [(s.t, _num(s.status_desired)) for s in rec.samples], r,
                dash="4 3"),
        _series("replicas", "/scale spec.replicas", [(s.t, _num(s.replicas)) for s in rec.samples], r),
        _markers(rec.events, m, r),
        _time_axis(r, r.top + r.height),
    ]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
            f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="sans-serif" font-size="12">'
            f'<title>{_esc(f"PromAutoscaler {rec.namespace}/{rec.name}: metric, target and replicas")}</title>'
            + "".join(body) + "</svg>")


def _num(value: int | None) -> float | None:
    return None if value is None else float(value)


def _event_rows(events: Sequence[ScaleEvent]) -> str:
    rows = [f"<tr><td>{_esc(e.time)}</td><td>{e.direction}</td><td>{e.from_replicas} &#8594; {e.to_replicas}</td>"
            f"<td>{_esc(e.rescale_reason)}</td><td>{_esc(e.limiting_reason)}: {_esc(e.limiting_message)}</td>"
            f"<td>{_esc(e.event_message)}</td></tr>" for e in events]
    return "".join(rows) or '<tr><td colspan="6">no scale events</td></tr>'


def render_html(rec: Recording) -> str:
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
{render_svg(rec)}
<h2>Scale events</h2>
<table><tr><th>decided (status.lastDecision.time)</th><th>direction</th><th>replicas</th>
<th>rescale reason</th><th>limiting reason</th><th>Event</th></tr>{_event_rows(rec.events)}</table>
<script type="application/json" id="samples">{data}</script>
</body>
</html>
"""
