"""The one chart renderer of the product and its workshop: time series as inline SVG, no script.

The backtest report (`controller.backtest.report_html`) and the demo page (`hack.demo.report`) draw
with it. A `Figure` is panels stacked over one time axis; a `Panel` holds `Line`s (a NaN or None
value breaks a line), `Dots`, shaded `Band`s (where compared runs differ) and `Note`s (a faint
vertical line with a label); `Event`s are vertical markers through every panel. What makes the
charts readable on days of data:

- the value axis is robust to outliers: when a few values (at most 0.5 %) lie far above the rest
  they are drawn along the top edge and marked (a triangle per run of clipped points, whose
  `<title>` gives the value and time, and a note naming how many and the highest), so one early
  spike cannot flatten three days along zero; values a panel must show (a target) are never clipped;
- value ticks at round steps and time ticks at round intervals (seconds up to days, with the date
  under the first tick of each day), each with a gridline;
- hover without script: the plot is cut into columns whose native `<title>` lists every line's
  value (or min-max) there, so a browser's tooltip reads them out on long ranges;
- long series are reduced to the min and max of each of at most `BUCKETS` buckets, so peaks survive.

Every line is a `<polyline>` whose `data-series` is its key. Non-goals: I/O, interactivity beyond
native tooltips, anything fetched from the network. Pure: returns strings; times are epoch seconds
passed in.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape

__all__ = ["BUCKETS", "Band", "Dots", "Event", "Figure", "Line", "Note", "Panel", "Scale", "nice_ticks",
           "render_svg", "scale", "si", "time_ticks"]

BUCKETS = 800
WIDTH, LEFT, RIGHT = 960, 64, 24
CLIP_SHARE, CLIP_FACTOR = 0.005, 1.5  # clip at most 0.5 % of values, and only those 1.5x above the rest
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
               172800, 604800)


def si(value: float) -> str:
    """A short axis label: 950, 1.5k, 12k, 3M."""
    size = abs(value)
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if size >= factor:
            return f"{value / factor:.4g}{suffix}"
    return f"{value:.4g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    key: str  # data-series
    label: str  # legend and hover
    times: Sequence[float]
    values: Sequence[float | None]  # None or NaN: no value (the line breaks)
    colour: str
    dash: str = ""
    width: float = 1.5
    opacity: float = 1.0
    step: bool = False  # a value holds until the next sample
    title: str = ""  # the line's own tooltip (default: label)
    legend: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Dots:
    key: str
    label: str
    points: Sequence[tuple[float, float]]  # (time, value)
    colour: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    start: float
    end: float
    title: str
    colour: str = "#f5c542"


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    t: float
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """A vertical marker through every panel; `dot` (panel index, value) adds a circle and `label`."""

    t: float
    title: str
    colour: str
    attrs: Mapping[str, str] = field(default_factory=dict)
    dot: tuple[int, float] | None = None
    label: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Panel:
    title: str
    lines: Sequence[Line] = ()
    dots: Sequence[Dots] = ()
    bands: Sequence[Band] = ()
    notes: Sequence[Note] = ()
    height: int = 200
    include: Sequence[float] = ()  # values the axis always shows (never clipped)
    integer: bool = False
    robust: bool = True  # clip far outliers (see `scale`); off where a rare spike is the point
    fmt: Callable[[float], str] = si


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    panels: Sequence[Panel]
    start: float
    end: float
    title: str = ""
    elapsed: bool = False  # time labels as seconds since `start`, not UTC clock times
    caption: str = ""  # under the time axis
    events: Sequence[Event] = ()
    hover: int = 120  # hover columns per panel (0: none)


@dataclass(frozen=True, slots=True)
class Scale:
    bottom: float  # 0, or below when a value is negative (never clipped)
    top: float
    ticks: list[float]
    clipped: int  # how many values lie above top
    highest: float


def nice_ticks(top: float, *, bottom: float = 0.0, integer: bool = False, count: int = 8) -> list[float]:
    """Round steps (1, 2, 2.5, 5 x 10^k) through 0, from the last at or below `bottom` (<= 0) to the
    first at or above `top`: the finest step giving at most `count` intervals, so little is wasted."""
    top = top if top > 0 and math.isfinite(top) else (1.0 if bottom >= 0 else 0.0)
    raw = (top - bottom) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(s for s in (m * power for m in (1, 2, 2.5, 5, 10))
                if math.ceil(top / s - 1e-9) - math.floor(bottom / s + 1e-9) <= count)
    if integer:
        step = max(1.0, math.ceil(step))
    return [i * step for i in range(math.floor(bottom / step + 1e-9), math.ceil(top / step - 1e-9) + 1)]


def scale(values: Sequence[float], include: Sequence[float] = (), *, integer: bool = False,
          robust: bool = True) -> Scale:
    """The value axis: up to the largest value, unless at most CLIP_SHARE of them lie more than
    CLIP_FACTOR above the rest; then those are clipped (never a value of `include`)."""
    finite = sorted(v for v in values if math.isfinite(v))
    floor = max((v for v in include if math.isfinite(v)), default=0.0)
    highest = finite[-1] if finite else 0.0
    top, clipped = max(highest, floor), 0
    if robust and len(finite) >= 20:
        keep = finite[len(finite) - 1 - int(len(finite) * CLIP_SHARE)]
        fence = max(keep * CLIP_FACTOR, floor)
        if highest > fence and keep > 0:
            top = max(max(v for v in finite if v <= fence), floor)
            clipped = len(finite) - bisect.bisect_right(finite, fence)
    low = min(0.0, finite[0] if finite else 0.0, *[v for v in include if math.isfinite(v)])
    ticks = nice_ticks(top * 1.05, bottom=low * 1.05, integer=integer)
    return Scale(ticks[0], ticks[-1], ticks, clipped, highest)


def time_ticks(start: float, end: float, *, elapsed: bool = False, count: int = 8) -> list[tuple[float, str, str]]:
    """(time, label, date label) at a round interval giving at most `count` ticks; the date label is
    set on the first tick of each UTC day (clock labels only)."""
    span = max(end - start, 1.0)
    step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1] * math.ceil(span / count / 604800))
    origin = start if elapsed else 0.0
    first = origin + math.ceil((start - origin) / step - 1e-9) * step
    out: list[tuple[float, str, str]] = []
    last_day = ""
    t = first
    while t <= end + 1e-9:
        if elapsed:
            s = round(t - start)
            label = f"{s}s" if step < 60 else (f"{s // 60}m" if step < 3600 else f"{s / 3600:g}h")
            out.append((t, label, ""))
        else:
            when = datetime.fromtimestamp(t, tz=UTC)
            day = when.strftime("%Y-%m-%d")
            out.append((t, when.strftime("%H:%M:%S" if step < 60 else "%H:%M"), day if day != last_day else ""))
            last_day = day
        t += step
    return out


def _reduce(times: Sequence[float], values: Sequence[float | None]) -> list[tuple[float, float | None]]:
    """Every point when short, else the min and max of each bucket (a None kept where a bucket has no value)."""
    n = len(values)
    if n <= 2 * BUCKETS:
        return list(zip(times, values, strict=True))
    out: list[tuple[float, float | None]] = []
    size = n / BUCKETS
    for b in range(BUCKETS):
        lo, hi = int(b * size), int((b + 1) * size)
        chunk = [(v, i) for i in range(lo, hi) if (v := values[i]) is not None and not math.isnan(v)]
        if not chunk:
            out.append((times[lo], None))
            continue
        low, high = min(chunk), max(chunk)
        out += [(times[i], v) for i, v in sorted({(low[1], low[0]), (high[1], high[0])})]
    return out


class _Plot:
    def __init__(self, fig: Figure, panel: Panel, top: float, sc: Scale) -> None:
        self.fig, self.panel, self.top, self.sc = fig, panel, top, sc
        self.span = max(fig.end - fig.start, 1e-9)

    def x(self, t: float) -> float:
        return round(LEFT + (t - self.fig.start) / self.span * (WIDTH - LEFT - RIGHT), 1)

    def y(self, v: float) -> float:
        share = (min(v, self.sc.top) - self.sc.bottom) / (self.sc.top - self.sc.bottom)
        return round(self.top + self.panel.height - share * self.panel.height, 1)

    def polylines(self, line: Line) -> str:
        runs: list[list[str]] = [[]]
        last: float | None = None
        for t, v in _reduce(line.times, line.values):
            if v is None or math.isnan(v):
                runs.append([])
                last = None
                continue
            if line.step and last is not None and v != last:
                runs[-1].append(f"{self.x(t)},{self.y(last)}")
            runs[-1].append(f"{self.x(t)},{self.y(v)}")
            last = v
        style = (f' stroke-dasharray="{line.dash}"' if line.dash else "") + (
            f' stroke-opacity="{line.opacity:g}"' if line.opacity < 1 else "")
        title = escape(line.title or line.label)
        return "".join(f'<polyline data-series="{escape(line.key)}" fill="none" stroke="{line.colour}" '
                       f'stroke-width="{line.width:g}"{style} points="{" ".join(r)}"><title>{title}</title></polyline>'
                       for r in runs if len(r) > 1 or (r and len(line.values) == 1))

    def clip_marks(self, line: Line) -> str:
        """One triangle on the top edge per run of values above the axis, its title the highest."""
        marks: list[str] = []
        run: list[tuple[float, float]] = []
        for t, v in [*zip(line.times, line.values, strict=True), (math.inf, None)]:
            if v is not None and math.isfinite(v) and v > self.sc.top:
                run.append((t, v))
                continue
            if run:
                t_max, v_max = max(run, key=lambda p: p[1])
                x = self.x(t_max)
                marks.append(f'<path d="M{x - 5},{self.top + 9} L{x + 5},{self.top + 9} L{x},{self.top} Z" '
                             f'fill="{line.colour}"><title>{escape(line.label)}: {escape(self.panel.fmt(v_max))} at '
                             f'{escape(self.when(t_max))}, above the axis ({len(run)} value(s) clipped)</title></path>')
                run = []
        return "".join(marks)

    def when(self, t: float) -> str:
        if self.fig.elapsed:
            return f"{t - self.fig.start:.0f}s"
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")

    def hover(self) -> str:
        """Transparent columns whose <title> lists each line's value in the column."""
        n = self.fig.hover
        if n <= 0 or not self.panel.lines:
            return ""
        width = (WIDTH - LEFT - RIGHT) / n
        cols = []
        for c in range(n):
            t0 = self.fig.start + self.span * c / n
            t1 = self.fig.start + self.span * (c + 1) / n
            rows = [self.when(t0) if self.fig.elapsed else f"{self.when(t0)} .. {self.when(t1)[11:]}"]
            for line in self.panel.lines:
                lo = bisect.bisect_left(line.times, t0)
                hi = len(line.times) if c == n - 1 else bisect.bisect_left(line.times, t1)
                if hi <= lo and lo > 0:  # sparse samples: the value holding at t0
                    lo, hi = lo - 1, lo
                seen = [v for v in line.values[lo:hi] if v is not None and math.isfinite(v)]
                if seen:
                    low, high = min(seen), max(seen)
                    shown = self.panel.fmt(low) if low == high else f"{self.panel.fmt(low)}-{self.panel.fmt(high)}"
                    rows.append(f"{line.label}: {shown}")
            cols.append(f'<rect x="{LEFT + c * width:.1f}" y="{self.top}" width="{width + 0.2:.1f}" '
                        f'height="{self.panel.height}" fill="#000" fill-opacity="0"><title>'
                        f'{escape(chr(10).join(rows))}</title></rect>')
        return f'<g class="hover">{"".join(cols)}</g>'


def _legend(lines: Sequence[Line], y: float) -> tuple[str, float]:
    parts, x, seen = [], LEFT, set()
    for line in lines:
        if not line.legend or line.label in seen:
            continue
        seen.add(line.label)
        width = 34 + 7 * len(line.label)
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, y = LEFT, y + 18
        style = f' stroke-dasharray="{line.dash}"' if line.dash else ""
        parts.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{line.colour}" stroke-width="2"'
                     f'{style}/><text x="{x + 30}" y="{y + 4}">{escape(line.label)}</text>')
        x += width
    return "".join(parts), y


def render_svg(fig: Figure) -> str:
    """The figure as one well-formed SVG element (xml.etree parses it)."""
    legend, y = _legend([ln for p in fig.panels for ln in p.lines], 14)
    top = y + 36
    body = [legend]
    plots: list[_Plot] = []
    ticks = time_ticks(fig.start, fig.end, elapsed=fig.elapsed)
    for panel in fig.panels:
        sc = scale([v for ln in panel.lines for v in ln.values if v is not None]
                   + [v for d in panel.dots for _, v in d.points], panel.include, integer=panel.integer,
                   robust=panel.robust)
        plot = _Plot(fig, panel, top, sc)
        plots.append(plot)
        bottom = top + panel.height
        body.append(f'<text x="{LEFT}" y="{top - 10}" font-weight="bold">{escape(panel.title)}</text>')
        if sc.clipped:
            body.append(f'<text class="clipped" x="{WIDTH - RIGHT}" y="{top - 10}" text-anchor="end" fill="#a33">'
                        f'&#9650; {sc.clipped} value(s) above {escape(panel.fmt(sc.top))} drawn on the top edge '
                        f'(highest {escape(panel.fmt(sc.highest))})</text>')
        body += [f'<rect class="band" x="{plot.x(b.start)}" y="{top}" height="{panel.height}" '
                 f'width="{max(plot.x(b.end) - plot.x(b.start), 1)}" fill="{b.colour}" fill-opacity="0.3">'
                 f'<title>{escape(b.title)}</title></rect>' for b in panel.bands]
        for value in sc.ticks:
            body.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{plot.y(value)}" y2="{plot.y(value)}" '
                        f'stroke="#e5e5e5"/><text class="ytick" x="{LEFT - 6}" y="{plot.y(value) + 4}" '
                        f'text-anchor="end">{escape(panel.fmt(value))}</text>')
        for t, _, _ in ticks:
            body.append(f'<line x1="{plot.x(t)}" x2="{plot.x(t)}" y1="{top}" y2="{bottom}" stroke="#eee"/>')
        body.append(f'<rect x="{LEFT}" y="{top}" width="{WIDTH - LEFT - RIGHT}" height="{panel.height}" '
                    'fill="none" stroke="#999"/>')
        for k, note in enumerate(panel.notes):
            x = plot.x(note.t)
            body.append(f'<g class="note"><line x1="{x}" x2="{x}" y1="{top}" y2="{bottom}" stroke="#bbb"/>'
                        f'<text x="{x + 4}" y="{top + 14 + 14 * (k % 2)}" fill="#777">{escape(note.text)}</text></g>')
        body += [plot.polylines(ln) for ln in panel.lines]
        body.append(plot.hover())  # under the clip marks, dots and events, whose own titles stay reachable
        body += [plot.clip_marks(ln) for ln in panel.lines]
        for d in panel.dots:
            dots = "".join(f'<circle cx="{plot.x(t)}" cy="{plot.y(v)}" r="2.5"/>' for t, v in d.points[:2000])
            body.append(f'<g data-series="{escape(d.key)}" fill="{d.colour}"><title>{escape(d.label)}</title>'
                        f'{dots}</g>')
        top = bottom + 50
    last = plots[-1]
    bottom = last.top + last.panel.height
    for t, label, day in ticks:
        x = last.x(t)
        body.append(f'<line x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 5}" stroke="#999"/>'
                    f'<text class="xtick" x="{x}" y="{bottom + 18}" text-anchor="middle">{label}</text>'
                    + (f'<text x="{x}" y="{bottom + 32}" text-anchor="middle" fill="#555">{day}</text>' if day else ""))
    for event in fig.events:
        x = plots[0].x(event.t)
        attrs = "".join(f' {k}="{escape(v)}"' for k, v in event.attrs.items())
        dot = ""
        if event.dot is not None:
            at = plots[event.dot[0]]
            cy = at.y(event.dot[1])
            dot = (f'<circle cx="{x}" cy="{cy}" r="6" fill="{event.colour}"/>'
                   f'<text x="{x + 8}" y="{cy - 8}" fill="{event.colour}">{escape(event.label)}</text>')
        body.append(f'<g{attrs}><title>{escape(event.title)}</title>'
                    f'<line x1="{x}" x2="{x}" y1="{plots[0].top}" y2="{bottom}" stroke="{event.colour}" '
                    f'stroke-width="6" stroke-opacity="0.15"/><line x1="{x}" x2="{x}" y1="{plots[0].top}" '
                    f'y2="{bottom}" stroke="{event.colour}" stroke-dasharray="2 3"/>{dot}</g>')
    height = bottom + 40 + (16 if fig.caption else 0)
    if fig.caption:
        body.append(f'<text x="{WIDTH - RIGHT}" y="{bottom + 50}" text-anchor="end">{escape(fig.caption)}</text>')
    title = f"<title>{escape(fig.title)}</title>" if fig.title else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:g}" viewBox="0 0 {WIDTH} '
            f'{height:g}" font-family="sans-serif" font-size="12">{title}{"".join(body)}</svg>')
