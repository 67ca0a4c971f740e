"""The one chart renderer, read as a user reads the chart: which values the axis shows, what it clips
and marks, which times and values are labelled, and where a compared spec is seen to differ."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from array import array

from adapter.rules.query import PromQL
from controller.algorithm import ControllerConfig
from controller.algorithm.spec import AutoscalerSpec, MetricSpec, MetricTarget, TargetType
from controller.backtest.chart import Figure, Line, Panel, render_svg
from controller.backtest.model import Grid, LoadModel, MetricHistory
from controller.backtest.report import MetricInfo, Report, SpecRun
from controller.backtest.report_html import render_html
from controller.backtest.simulate import simulate
from controller.backtest.summary import summarize
from controller.history.resolve import MetricQuery, QueryKind

SVG = "{http://www.w3.org/2000/svg}"
DAY = 86400.0
START = 1_700_006_400.0  # 2023-11-15T00:00:00Z


def _three_days(*, outlier: float | None) -> tuple[list[float], list[float]]:
    """A value every 5 minutes over 3 days, 400..600 in a daily wave, an early spike at the 3rd point."""
    times = [START + 300.0 * i for i in range(864)]
    values = [500.0 + 100.0 * ((i % 288) / 144.0 - 1.0) for i in range(864)]
    if outlier is not None:
        values[2] = outlier
    return times, values


def _svg(fig: Figure) -> ET.Element:
    return ET.fromstring(render_svg(fig))


def _texts(svg: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("class") == cls]


def _figure(times: list[float], values: list[float], include: tuple[float, ...] = ()) -> Figure:
    return Figure(start=times[0], end=times[-1], panels=[Panel(title="load", include=include, lines=[
        Line(key="load", label="load", times=times, values=values, colour="#000")])])


def _heights(svg: ET.Element) -> tuple[float, float, list[float]]:
    """The plot frame's top and bottom, and the y of every point of the line."""
    frame = next(r for r in svg.iter(f"{SVG}rect") if r.get("stroke") == "#999")
    top = float(frame.get("y", "0"))
    ys = [float(p.split(",")[1]) for line in svg.iter(f"{SVG}polyline") for p in (line.get("points") or "").split()]
    return top, top + float(frame.get("height", "0")), ys


def test_one_early_outlier_is_clipped_and_marked_so_the_days_after_it_fill_the_chart() -> None:
    times, values = _three_days(outlier=50_000.0)
    svg = _svg(_figure(times, values))
    assert _texts(svg, "ytick")[-1] in {"600", "650", "700"}, "the axis ends just above the days' values"
    top, bottom, ys = _heights(svg)
    days = ys[:2] + ys[3:]
    assert (max(days) - min(days)) > 0.2 * (bottom - top), "the 3 days span the chart, not a flat line at zero"
    assert ys[2] == top, "the outlier is drawn on the top edge"
    [note] = _texts(svg, "clipped")
    assert "1 value(s) above" in note and "highest 50k" in note
    marks = [p.findtext(f"{SVG}title") or "" for p in svg.iter(f"{SVG}path")]
    assert marks == ["load: 50k at 2023-11-15 00:10:00, above the axis (1 value(s) clipped)"]


def test_without_outliers_or_below_a_target_nothing_is_clipped() -> None:
    times, values = _three_days(outlier=None)
    svg = _svg(_figure(times, values))
    assert _texts(svg, "clipped") == [] and not list(svg.iter(f"{SVG}path"))
    assert float(_texts(svg, "ytick")[-1]) >= 600
    times, values = _three_days(outlier=5_000.0)
    svg = _svg(_figure(times, values, include=(6_000.0,)))  # a target above the spike: the spike is in range
    assert _texts(svg, "clipped") == [] and _texts(svg, "ytick")[-1] == "7k"


def test_time_and_value_axes_have_round_ticks_with_gridlines() -> None:
    times, values = _three_days(outlier=None)
    svg = _svg(_figure(times, values))
    assert _texts(svg, "xtick") == ["00:00", "12:00", "00:00", "12:00", "00:00", "12:00"]
    dates = [t.text for t in svg.iter(f"{SVG}text") if re.fullmatch(r"\d{4}-\d\d-\d\d", t.text or "")]
    assert dates == ["2023-11-15", "2023-11-16", "2023-11-17"], "the date under the first tick of each day"
    assert _texts(svg, "ytick") == ["0", "100", "200", "300", "400", "500", "600", "700"]
    grid = [ln for ln in svg.iter(f"{SVG}line") if ln.get("stroke") in {"#e5e5e5", "#eee"}]
    assert len(grid) == 6 + 8
    elapsed = _svg(Figure(start=0.0, end=95.0, elapsed=True, panels=[Panel(title="m", lines=[
        Line(key="m", label="m", times=[0.0, 95.0], values=[1.0, 2.0], colour="#000")])]))
    assert _texts(elapsed, "xtick") == [f"{s}s" for s in range(0, 91, 15)]


def test_hovering_a_column_reads_out_each_line_there() -> None:
    times, values = _three_days(outlier=None)
    svg = _svg(Figure(start=times[0], end=times[-1], hover=3, panels=[Panel(title="load", lines=[
        Line(key="load", label="load", times=times, values=values, colour="#000")])]))
    titles = [r.findtext(f"{SVG}title") for g in svg.iter(f"{SVG}g") if g.get("class") == "hover"
              for r in g.iter(f"{SVG}rect")]
    assert len(titles) == 3
    assert titles[0] == "2023-11-15 00:00:00 .. 23:58:20\nload: 400-599.3"


def _report(*max_replicas: int) -> Report:
    grid = Grid(start=START, step=15.0, count=8)
    spec = AutoscalerSpec(min_replicas=1, max_replicas=6, metrics=(
        MetricSpec(type="Pods", name="rps", target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000)),))
    history = MetricHistory(total=array("d", [d * 1000.0 for d in [20, 60, 60, 60, 60, 10, 10, 10]]),
                            present=bytes([1] * 8), pods=array("H", [2] * 8))
    query = MetricQuery(index=0, spec=spec.metrics[0], kind=QueryKind.PER_POD, promql=PromQL("sum(rps) by (pod)"),
                        object_label="pod")
    model = LoadModel(grid=grid, queries=[query], histories=[history], actual=None, window=0.0)
    info = MetricInfo(label="Pods rps (AverageValue)", unit="m", promql=query.promql, rule="r", assumption="a")
    runs = []
    for top in max_replicas:
        s = AutoscalerSpec(min_replicas=1, max_replicas=top, metrics=spec.metrics)
        timeline = simulate(f"max{top}", s, model, grid, config=ControllerConfig(downscale_stabilization=0),
                            requests={}, initial_replicas=2, explain_at=None)
        runs.append(SpecRun(source=f"max{top}.yaml", timeline=timeline, metrics=(info,),
                            summary=summarize(timeline, model, flap_window=600, per_node=None)))
    return Report(inputs={}, runs=tuple(runs), gaps=(), actual=(), actual_source="", per_node=None, flap_window=600)


def test_compared_specs_show_where_they_differ() -> None:
    report = _report(6, 4)
    assert [list(r.timeline.replicas) for r in report.runs] == [[2, 4, 6, 6, 6, 1, 1, 1], [2, 4, 4, 4, 4, 1, 1, 1]]
    page = render_html(report)
    bands = re.findall(r'<rect class="band"[^>]*><title>([^<]*)</title>', page)
    assert bands == ["2023-11-15T00:00:30Z .. 2023-11-15T00:01:00Z: replicas differ (max6 6-6; max4 4-4)"]
    diff = re.search(r'<polyline data-series="replicas difference: max4 - max6"[^>]*points="([^"]*)"', page)
    assert diff is not None
    svg = ET.fromstring(re.search(r"<h3>Replicas compared[^<]*</h3>(<svg.*?</svg>)", page, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert "-2" in _texts(svg, "ytick") and "0" in _texts(svg, "ytick")
    widths = re.findall(r'data-series="replicas: (max\d)"[^>]*stroke-width="([\d.]+)"', page)
    assert widths == [("max6", "2.8"), ("max4", "1.2")], "the first spec drawn wider, under the second"
    single = render_html(_report(6))
    assert 'class="band"' not in single and "Replicas compared" not in single
