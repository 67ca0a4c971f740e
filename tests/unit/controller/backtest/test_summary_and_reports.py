"""The summary figures and the report formats, on a replay built from literal history."""

from __future__ import annotations

import csv
import io
import json
from array import array
from html.parser import HTMLParser
from pathlib import Path

import pytest

from adapter.rules.query import PromQL
from controller.algorithm import ControllerConfig
from controller.algorithm.spec import AutoscalerSpec, MetricSpec, MetricTarget, TargetType
from controller.backtest.cli import main
from controller.backtest.model import Gap, Grid, LoadModel, MetricHistory
from controller.backtest.report import MetricInfo, Report, SpecRun, render_text
from controller.backtest.report_data import render_csv, render_json
from controller.backtest.report_html import render_html
from controller.history.resolve import MetricQuery, QueryKind
from controller.backtest.simulate import ScaleChange, simulate
from controller.backtest.summary import count_flaps, pods_per_node, summarize

GRID = Grid(start=0.0, step=15.0, count=8)
SPEC = AutoscalerSpec(min_replicas=1, max_replicas=6, metrics=(
    MetricSpec(type="Pods", name="rps", target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000)),))
DEMAND = [20, 60, 60, 60, 0, 10, 10, 10]  # per sync, total over the pods; tick 4 has no sample


def _report() -> Report:
    present = bytes(0 if i == 4 else 1 for i in range(GRID.count))
    history = MetricHistory(total=array("d", [d * 1000.0 for d in DEMAND]), present=present,
                            pods=array("H", [2] * GRID.count))
    query = MetricQuery(index=0, spec=SPEC.metrics[0], kind=QueryKind.PER_POD, promql=PromQL("sum(rps) by (pod)"), object_label="pod")
    model = LoadModel(grid=GRID, queries=[query], histories=[history], actual=None, window=0.0)
    timeline = simulate("web", SPEC, model, GRID, config=ControllerConfig(downscale_stabilization=0),
                        requests={"cpu": 500}, initial_replicas=2, explain_at=1)
    summary = summarize(timeline, model, flap_window=600, per_node=3)
    info = MetricInfo(label="Pods rps (AverageValue)", unit="m", promql=query.promql, rule="rules.yaml: rules[0]",
                      assumption="counterfactual")
    return Report(inputs={"spec": "web.yaml"}, runs=(SpecRun(source="web.yaml", timeline=timeline, summary=summary,
                                                               metrics=(info,)),),
                  gaps=(Gap(what="Pods rps (AverageValue)", start=60.0, end=60.0, ticks=1),), actual=(),
                  actual_source="the pods reporting", per_node=3, flap_window=600)


def test_the_replay_and_its_summary() -> None:
    report = _report()
    run = report.runs[0]
    # legacy path: scale-up limit max(2 x current, 4), no downscale window; tick 4 has no sample
    assert list(run.timeline.replicas) == [2, 4, 6, 6, 6, 1, 1, 1]
    assert "no sample in history" in run.timeline.errors[4]
    s = run.summary
    assert (s.scale_ups, s.scale_downs, s.flaps, s.largest_change, s.blocked_ticks) == (2, 1, 1, 5, 1)
    assert s.replica_hours == pytest.approx(26 * 15 / 3600)  # the range ends at the last sync
    assert (s.peak_nodes, s.seconds_at_max, s.seconds_at_min) == (2, 45.0, 30.0)
    assert s.peak_ratio == pytest.approx(3.0)  # 60 over 2 pods against 10 per pod
    assert s.seconds_above_target == 30.0  # 30 per pod, then 15 per pod


@pytest.mark.parametrize(("moves", "flaps"), [
    pytest.param([(0, 1, 2), (60, 2, 3)], 0, id="same direction"),
    pytest.param([(0, 1, 3), (60, 3, 2), (120, 2, 3)], 2, id="up down up within the window"),
    pytest.param([(0, 1, 3), (900, 3, 2)], 0, id="reversal after the window"),
])
def test_flaps_are_reversals_within_the_window(moves: list[tuple[float, int, int]], flaps: int) -> None:
    changes = [ScaleChange(time=t, before=b, after=a, reason="") for t, b, a in moves]
    assert count_flaps(changes, 600) == flaps


@pytest.mark.parametrize(("allocatable", "requests", "per_node"), [
    pytest.param({"cpu": 4000, "memory": 16_000}, {"cpu": 1000, "memory": 1000}, 4, id="cpu-bound"),
    pytest.param({"cpu": 4000, "memory": 3000}, {"cpu": 1000, "memory": 1000}, 3, id="memory-bound"),
    pytest.param({"cpu": 4000}, {}, None, id="no requests"),
])
def test_pods_per_node_is_set_by_the_scarcest_resource(allocatable: dict[str, int], requests: dict[str, int],
                                                       per_node: int | None) -> None:
    assert pods_per_node(allocatable, requests) == per_node


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.series: set[str] = set()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.series.update(v for k, v in attrs if k == "data-series" and v)


def test_the_reports_carry_every_series_in_every_format() -> None:
    report = _report()
    parser = _Collect()
    parser.feed(render_html(report))
    assert parser.series == {"replicas: web", "scale events: web", "metric 0: web", "target 0: web", "nodes: web"}
    assert "script" not in parser.tags and parser.tags.count("svg") == 3
    body = json.loads(render_json(report))
    steps = body["runs"][0]["steps"]
    assert [s["replicas"] for s in steps] == [2, 4, 6, 6, 6, 1, 1, 1]
    assert steps[4]["values"] == [None] and body["gaps"][0]["syncs"] == 1
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert [r["replicas"] for r in rows] == ["2", "4", "6", "6", "6", "1", "1", "1"]
    assert (rows[0]["metric0_value"], rows[0]["metric0_target"], rows[4]["metric0_value"]) == ("10000", "10000", "")
    text = render_text(report)
    assert "history gaps (1;" in text and "decision of web at the --explain-at tick" in text


@pytest.mark.parametrize(("metric", "extra", "says"), [
    pytest.param('{type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "1"}}}',
                 ["--from", "now-400d", "--to", "now"], "over the limit of 500,000: use --step 2m", id="too many syncs"),
    pytest.param("{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}",
                 ["--from", "now-1h", "--to", "now"], "--pod-requests cpu=", id="utilization without requests"),
])
def test_errors_before_any_query_are_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str,
                                                extra: list[str], says: str) -> None:
    (tmp_path / "s.yaml").write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n"
        f"spec: {{scaleTargetRef: {{kind: Deployment, name: web}}, maxReplicas: 4, metrics: [{metric}]}}\n")
    (tmp_path / "r.yaml").write_text("rules: []\n")
    code = main(["-f", str(tmp_path / "s.yaml"), "--rules", str(tmp_path / "r.yaml"),
                 "--prometheus-url", "http://127.0.0.1:9", *extra])
    err = capsys.readouterr().err
    assert code == 1 and says in err
