"""The self-contained HTML report: inline SVG charts and tables, no script, no network.

Charts: replicas over time (every spec overlaid, the actual replicas dashed when known, each
scale event marked, min/max as thin lines); one chart per metric index with each spec's value as
the algorithm compared it and its target (dashed); for a predictive spec, per metric, the forecast
made at each sync against what happened (the recorded load, and dashed its highest value over the
horizon after the sync, which the forecast aimed at); nodes needed when node sizes were given.
Long series are reduced to the min and max of each of at most `_BUCKETS` buckets, so peaks
survive. Every line is a `<polyline>` with `data-series` naming it. Then the summary table, the
load model per metric (query, rule, assumption), the gaps and the inputs.

Non-goals: computing anything. Pure: returns a string.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from html import escape

from controller.backtest.report import (
    Report, difference_lines, fmt_seconds, fmt_time, gap_lines, summary_rows, warning_lines,
)  # fmt: skip

__all__ = ["render_html"]

_BUCKETS = 800
_W, _H, _PAD = 960, 220, 40
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th:first-child,td:first-child"
          "{text-align:left}pre{background:#f6f6f6;padding:1em;overflow-x:auto}svg{background:#fff}"
          "code{font-size:90%}")


def _reduce(values: Sequence[float]) -> list[tuple[int, float]]:
    """(index, value) points: everything when short, else the min and max of each bucket."""
    n = len(values)
    if n <= 2 * _BUCKETS:
        return [(i, v) for i, v in enumerate(values) if not math.isnan(v)]
    out: list[tuple[int, float]] = []
    size = n / _BUCKETS
    for b in range(_BUCKETS):
        lo, hi = int(b * size), int((b + 1) * size)
        chunk = [(v, i) for i, v in enumerate(values[lo:hi], lo) if not math.isnan(v)]
        if chunk:
            low, high = min(chunk), max(chunk)
            out += sorted({(low[1], low[0]), (high[1], high[0])})
    return out


class _Chart:
    def __init__(self, title: str, count: int, top: float) -> None:
        self.title, self.count = title, max(count, 2)
        self.top = top if top > 0 and math.isfinite(top) else 1.0
        self.parts: list[str] = []

    def x(self, i: float) -> float:
        return _PAD + (_W - 2 * _PAD) * i / (self.count - 1)

    def y(self, v: float) -> float:
        return _H - _PAD / 2 - (_H - _PAD) * v / self.top

    def line(self, name: str, values: Sequence[float], colour: str, dashed: bool = False) -> None:
        points = " ".join(f"{self.x(i):.1f},{self.y(v):.1f}" for i, v in _reduce(values))
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        self.parts.append(f'<polyline data-series="{escape(name)}" fill="none" stroke="{colour}" '
                          f'stroke-width="1.2"{dash} points="{points}"><title>{escape(name)}</title></polyline>')

    def marks(self, name: str, points: Sequence[tuple[int, float]], colour: str) -> None:
        dots = "".join(f'<circle cx="{self.x(i):.1f}" cy="{self.y(v):.1f}" r="2.5"/>' for i, v in points[:2000])
        self.parts.append(f'<g data-series="{escape(name)}" fill="{colour}"><title>{escape(name)}</title>{dots}</g>')

    def svg(self, start: str, end: str) -> str:
        axis = (f'<line x1="{_PAD}" y1="{self.y(0):.1f}" x2="{_W - _PAD}" y2="{self.y(0):.1f}" stroke="#999"/>'
                f'<text x="{_PAD}" y="{_H - 2}" font-size="11">{start}</text>'
                f'<text x="{_W - _PAD}" y="{_H - 2}" font-size="11" text-anchor="end">{end}</text>'
                f'<text x="2" y="{self.y(self.top) + 4:.1f}" font-size="11">{self.top:g}</text>'
                f'<text x="2" y="{self.y(0):.1f}" font-size="11">0</text>')
        return (f'<h3>{escape(self.title)}</h3><svg xmlns="http://www.w3.org/2000/svg" width="{_W}" '
                f'height="{_H}" viewBox="0 0 {_W} {_H}">{axis}{"".join(self.parts)}</svg>')


def _replicas_chart(report: Report) -> _Chart:
    grid = report.runs[0].timeline.grid
    known = [a for a in report.actual if a is not None]
    top = max([max(r.timeline.spec.max_replicas, max(r.timeline.replicas, default=0)) for r in report.runs]
              + known) * 1.1
    chart = _Chart("Replicas", grid.count, top)
    for k, run in enumerate(report.runs):
        colour = _COLOURS[k % len(_COLOURS)]
        chart.line(f"replicas: {run.name}", [float(r) for r in run.timeline.replicas], colour)
        index = {c.time: c.after for c in run.timeline.changes}
        chart.marks(f"scale events: {run.name}",
                    [(grid.index(t), float(v)) for t, v in index.items()], colour)
    if report.actual:
        chart.line("replicas: actual", [math.nan if a is None else a for a in report.actual], "#555", True)
    return chart


def _metric_charts(report: Report) -> list[_Chart]:
    grid = report.runs[0].timeline.grid
    charts = []
    for k in range(max(len(r.metrics) for r in report.runs)):
        runs = [r for r in report.runs if k < len(r.metrics)]
        finite = [v for r in runs for v in (*r.timeline.values[k], r.timeline.targets[k]) if math.isfinite(v)]
        chart = _Chart(f"Metric {k}: " + " / ".join(sorted({f"{r.metrics[k].label} [{r.metrics[k].unit}]"
                                                            for r in runs})),
                       grid.count, max(finite, default=1.0) * 1.1)
        for run in runs:
            colour = _COLOURS[report.runs.index(run) % len(_COLOURS)]
            chart.line(f"metric {k}: {run.name}", run.timeline.values[k], colour)
            chart.line(f"target {k}: {run.name}", [run.timeline.targets[k]] * grid.count, colour, True)
        charts.append(chart)
    return charts


def _ahead(values: Sequence[float], ticks: int) -> list[float]:
    """Per tick, the highest value in the next `ticks` ticks (the tick itself included): what a forecast
    of the highest value over the horizon is judged against (NaN where none is known)."""
    out: list[float] = []
    window: deque[tuple[int, float]] = deque()  # (index, value), values decreasing: a sliding maximum
    for i in range(len(values) - 1, -1, -1):
        v = values[i]
        if not math.isnan(v):
            while window and window[-1][1] <= v:
                window.pop()
            window.append((i, v))
        while window and window[0][0] > i + ticks:
            window.popleft()
        out.append(window[0][1] if window else math.nan)
    out.reverse()
    return out


def _forecast_charts(report: Report) -> list[_Chart]:
    """Per predictive run and metric: the forecast made at each sync, the highest recorded load over
    the horizon after it (what it aimed at) and the recorded load, in the metric's milli-units."""
    grid = report.runs[0].timeline.grid
    charts = []
    for k, run in enumerate(report.runs):
        t = run.timeline
        for m, (forecast, load) in enumerate(zip(t.forecasts, t.loads, strict=False)):
            ahead = _ahead(load, max(0, round(t.horizon / grid.step)))
            finite = [v for v in (*forecast, *load) if math.isfinite(v)]
            if not any(math.isfinite(v) for v in forecast):
                continue
            chart = _Chart(f"Forecast vs what happened: {run.name} metric {m} ({run.metrics[m].label}, m; "
                           f"horizon {fmt_seconds(t.horizon)})", grid.count, max(finite, default=1.0) * 1.1)
            chart.line(f"recorded load {m}: {run.name}", load, "#555")
            chart.line(f"highest load over the horizon {m}: {run.name}", ahead, "#2ca02c", True)
            chart.line(f"forecast {m}: {run.name}", forecast, _COLOURS[k % len(_COLOURS)])
            charts.append(chart)
    return charts


def _nodes_chart(report: Report) -> _Chart | None:
    per = report.per_node
    if not per:
        return None
    grid = report.runs[0].timeline.grid
    series = [[float(math.ceil(r / per)) for r in run.timeline.replicas] for run in report.runs]
    chart = _Chart(f"Nodes needed ({per} pods per node)", grid.count, max(max(s) for s in series) * 1.1)
    for k, (run, values) in enumerate(zip(report.runs, series, strict=True)):
        chart.line(f"nodes: {run.name}", values, _COLOURS[k % len(_COLOURS)])
    return chart


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def render_html(report: Report) -> str:
    grid = report.runs[0].timeline.grid
    start, end = fmt_time(grid.start), fmt_time(grid.end)
    charts = [_replicas_chart(report), *_metric_charts(report), *_forecast_charts(report)]
    nodes = _nodes_chart(report)
    if nodes is not None:
        charts.append(nodes)
    legend = " ".join(f'<span style="color:{_COLOURS[k % len(_COLOURS)]}">&#9632; {escape(r.name)}</span>'
                      for k, r in enumerate(report.runs))
    model = [(r.name, f"[{k}] {m.label}", m.assumption, m.rule, m.promql)
             for r in report.runs for k, m in enumerate(r.metrics)]
    explained = "".join(f"<h3>Decision of {escape(r.name)} at --explain-at</h3>"
                        f"<pre>{escape(r.timeline.explained)}</pre>"
                        for r in report.runs if r.timeline.explained)
    return "".join([
        f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Backtest {start} .. {end}</title>",
        f"<style>{_STYLE}</style></head><body><h1>Backtest</h1>",
        f"<p>{start} .. {end}, step {fmt_seconds(grid.step)}, {grid.count} syncs per spec. {legend}; "
        "dashed: targets and actual replicas; dots: scale events.</p>",
        "<h2>Summary</h2>", _table(["", *(r.name for r in report.runs)],
                                   [[label, *cells] for label, cells in summary_rows(report)]),
        "<h2>Charts</h2>", *(c.svg(start, end) for c in charts),
        f"<h2>Load model</h2><p>Actual replicas: {escape(report.actual_source)}.</p>",
        _table(["spec", "metric", "assumption", "rule", "query"], model),
        "<h2>History gaps</h2><pre>", escape("\n".join(gap_lines(report.gaps, grid.step)
                                                   + warning_lines(report.warnings))), "</pre>",
        "<h2>Against the recorded replicas</h2><pre>", escape("\n".join(difference_lines(report) or ["unknown"])),
        "</pre>",
        explained,
        "<h2>Inputs</h2>", _table(["input", "value"], sorted(report.inputs.items())),
        "</body></html>\n",
    ])
