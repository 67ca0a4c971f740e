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

from controller.backtest.chart import Band, Dots, Figure, Line, Panel, render_svg
from controller.backtest.report import (
    Report, difference_lines, fmt_seconds, fmt_time, gap_lines, summary_rows, warning_lines,
)  # fmt: skip

__all__ = ["render_html"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th:first-child,td:first-child"
          "{text-align:left}pre{background:#f6f6f6;padding:1em;overflow-x:auto}svg{background:#fff}"
          "code{font-size:90%}")
_MAX_BANDS = 300


def _colour(k: int) -> str:
    return _COLOURS[k % len(_COLOURS)]


def _width(k: int, runs: int) -> float:
    """Overlaid runs: the first widest and drawn first, so a later one on top leaves it showing."""
    return 1.2 + 1.6 * (runs - 1 - k) if runs > 1 else 1.2


def _chart(title: str, report: Report, *panels: Panel) -> tuple[str, str]:
    grid = report.runs[0].timeline.grid
    return title, render_svg(Figure(panels=panels, start=grid.start, end=grid.end, title=title))


def _differ_bands(report: Report, times: Sequence[float]) -> list[Band]:
    """Where any compared run's replicas differ from the first's, as shaded spans (nearby spans
    merged so at most `_MAX_BANDS` remain), each titled with the counts over the span."""
    runs = report.runs
    spans: list[list[int]] = []
    for i in range(len(times)):
        if any(r.timeline.replicas[i] != runs[0].timeline.replicas[i] for r in runs[1:]):
            if spans and spans[-1][1] == i - 1:
                spans[-1][1] = i
            else:
                spans.append([i, i])
    gap = 1
    while len(spans) > _MAX_BANDS:
        gap *= 2
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo - merged[-1][1] <= gap:
                merged[-1][1] = hi
            else:
                merged.append([lo, hi])
        spans = merged
    bands = []
    for lo, hi in spans:
        counts = "; ".join(f"{r.name} {min(r.timeline.replicas[lo:hi + 1])}-{max(r.timeline.replicas[lo:hi + 1])}"
                           for r in runs)
        step = report.runs[0].timeline.grid.step
        bands.append(Band(start=times[lo] - step / 2, end=times[hi] + step / 2,
                          title=f"{fmt_time(times[lo])} .. {fmt_time(times[hi])}: replicas differ ({counts})"))
    return bands


def _replicas_charts(report: Report, times: Sequence[float]) -> list[tuple[str, str]]:
    grid = report.runs[0].timeline.grid
    n = len(report.runs)
    lines, dots = [], []
    for k, run in enumerate(report.runs):
        lines.append(Line(key=f"replicas: {run.name}", label=run.name, times=times, colour=_colour(k),
                          values=[float(r) for r in run.timeline.replicas], width=_width(k, n),
                          opacity=0.75 if k < n - 1 else 1.0))
        dots.append(Dots(key=f"scale events: {run.name}", label=f"scale events: {run.name}", colour=_colour(k),
                         points=[(grid.time(grid.index(c.time)), float(c.after)) for c in run.timeline.changes]))
    if report.actual:
        lines.append(Line(key="replicas: actual", label="actual", times=times, colour="#555", dash="5,3",
                          values=[math.nan if a is None else a for a in report.actual]))
    limits = [float(r.timeline.spec.max_replicas) for r in report.runs]
    charts = [_chart("Replicas", report, Panel(title="replicas per spec" + (
        " (shaded: where the specs differ)" if n > 1 else ""), lines=lines, dots=dots, integer=True,
        include=limits, bands=_differ_bands(report, times) if n > 1 else ()))]
    if n > 1:
        base = report.runs[0]
        diffs = [Line(key=f"replicas difference: {r.name} - {base.name}", label=f"{r.name} - {base.name}",
                      times=times, colour=_colour(k), values=[float(a - b) for a, b in
                                                              zip(r.timeline.replicas, base.timeline.replicas,
                                                                  strict=True)])
                 for k, r in enumerate(report.runs[1:], 1)]
        charts.append(_chart(f"Replicas compared: each spec minus {base.name} (above 0: more replicas)", report,
                             Panel(title=f"replicas minus {base.name}", lines=diffs, height=140, integer=True,
                                   robust=False, include=[1.0, -1.0], fmt=lambda v: f"{v:+g}" if v else "0")))
    return charts


def _metric_charts(report: Report, times: Sequence[float]) -> list[tuple[str, str]]:
    grid = report.runs[0].timeline.grid
    n = len(report.runs)
    charts = []
    for k in range(max(len(r.metrics) for r in report.runs)):
        runs = [r for r in report.runs if k < len(r.metrics)]
        lines = []
        for run in runs:
            c = report.runs.index(run)
            lines.append(Line(key=f"metric {k}: {run.name}", label=f"value: {run.name}", times=times,
                              values=run.timeline.values[k], colour=_colour(c), width=_width(c, n),
                              opacity=0.75 if c < n - 1 else 1.0))
            lines.append(Line(key=f"target {k}: {run.name}", label=f"target: {run.name}", dash="5,3",
                              times=[grid.start, grid.end], values=[run.timeline.targets[k]] * 2, colour=_colour(c)))
        title = f"Metric {k}: " + " / ".join(sorted({f"{r.metrics[k].label} [{r.metrics[k].unit}]" for r in runs}))
        charts.append(_chart(title, report, Panel(title="value as the algorithm compared it, and its target",
                                                  lines=lines, include=[r.timeline.targets[k] for r in runs])))
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


def _forecast_charts(report: Report, times: Sequence[float]) -> list[tuple[str, str]]:
    """Per predictive run and metric: the forecast made at each sync, the highest recorded load over
    the horizon after it (what it aimed at) and the recorded load, in the metric's milli-units."""
    grid = report.runs[0].timeline.grid
    charts = []
    for k, run in enumerate(report.runs):
        t = run.timeline
        for m, (forecast, load) in enumerate(zip(t.forecasts, t.loads, strict=False)):
            if not any(math.isfinite(v) for v in forecast):
                continue
            ahead = _ahead(load, max(0, round(t.horizon / grid.step)))
            lines = [Line(key=f"recorded load {m}: {run.name}", label="recorded load", times=times, values=load,
                          colour="#555", width=2.4, opacity=0.6),
                     Line(key=f"highest load over the horizon {m}: {run.name}", label="highest load over the horizon",
                          times=times, values=ahead, colour="#2ca02c", dash="5,3"),
                     Line(key=f"forecast {m}: {run.name}", label="forecast", times=times, values=forecast,
                          colour=_colour(k))]
            charts.append(_chart(f"Forecast vs what happened: {run.name} metric {m} ({run.metrics[m].label}, m; "
                                 f"horizon {fmt_seconds(t.horizon)})", report, Panel(title="milli-units", lines=lines)))
    return charts


def _nodes_chart(report: Report, times: Sequence[float]) -> list[tuple[str, str]]:
    per = report.per_node
    if not per:
        return []
    n = len(report.runs)
    lines = [Line(key=f"nodes: {run.name}", label=run.name, times=times, colour=_colour(k), width=_width(k, n),
                  values=[float(math.ceil(r / per)) for r in run.timeline.replicas], opacity=0.75 if k < n - 1 else 1)
             for k, run in enumerate(report.runs)]
    return [_chart(f"Nodes needed ({per} pods per node)", report, Panel(title="nodes", lines=lines, integer=True))]


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def render_html(report: Report) -> str:
    grid = report.runs[0].timeline.grid
    start, end = fmt_time(grid.start), fmt_time(grid.end)
    times = [grid.time(i) for i in range(grid.count)]
    charts = [*_replicas_charts(report, times), *_metric_charts(report, times), *_forecast_charts(report, times),
              *_nodes_chart(report, times)]
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
        "dashed: targets and actual replicas; dots: scale events; &#9650; on a chart's top edge: values above its "
        "axis (the axis leaves out a few far outliers); hover over a chart for the values at that time.</p>",
        "<h2>Summary</h2>", _table(["", *(r.name for r in report.runs)],
                                   [[label, *cells] for label, cells in summary_rows(report)]),
        "<h2>Charts</h2>", *(f"<h3>{escape(title)}</h3>{svg}" for title, svg in charts),
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
