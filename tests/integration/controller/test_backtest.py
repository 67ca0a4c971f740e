"""`backtest` against a real Prometheus holding a known history (backfilled with promtool), and
against a real VictoriaMetrics holding the same history (imported over HTTP): every test runs on
both, ids `[prometheus]` / `[victoriametrics]`.

One backend serves every scenario, each in its own namespace: a short history whose replica
timeline is computed by hand below, a noisy series replayed with a short and a long scale-down
window (`--compare`), a series with a hole in it, and a spec the rules cannot resolve.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from controller.backtest.cli import main
from hack.stack.backfill import BackfilledPrometheus, BackfilledVictoriaMetrics, openmetrics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
STEP = 15
NOISY_TICKS = 720  # three hours

RULES = """
rules:
- seriesQuery: '{__name__=~"^bt_.*",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
resourceRules:
  cpu:
    containerQuery: 'sum(cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
"""

# Short history, namespace "exact": two pods of `web` report bt_requests; two replicas ran.
EXACT_PER_POD = [10, 30, 30, 5, 5, 5, 5, 5, 5]
# Hand computation (target averageValue 10 per pod, tolerance 0.1, scale-down window 60 s, default
# scale-up policies: +4 pods or +100 % per 15 s). Demand = per-pod value x 2 actual replicas.
#  t0: 2 pods, 20 / 2 = 10 per pod, ratio 1.0 -> 2
#  t1: 60 / 2 = 30, ratio 3 -> ceil(3 x 2) = 6; limit max(2 + 4, 2 x 2) = 6 -> 6
#  t2: 60 / 6 = 10, ratio 1 -> 6
#  t3: 10 / 6 = 1.666 (1666m), ratio 0.1666 -> ceil(0.9996) = 1; window (t3-60, t3] holds 2, 6, 6 -> 6
#  t4: window holds 6, 6, 1, 1 -> 6;  t5: 6, 1, 1, 1 -> 6
#  t6: window holds only 1s -> 1 (scale-down policy 100 % allows it, minReplicas 1)
#  t7, t8: 10 / 1 = 10 per pod, ratio 1 -> 1
EXACT_REPLICAS = [2, 6, 6, 6, 6, 6, 1, 1, 1]


def _spec(name: str, namespace: str, metric: str, *, down_window: int | None = None, target: str = "10") -> str:
    behavior = ""
    if down_window is not None:
        behavior = f"\n  behavior:\n    scaleDown: {{stabilizationWindowSeconds: {down_window}}}"
    return f"""
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: 30
  syncPeriodSeconds: 15
  metrics:
  - type: Pods
    pods: {{metric: {{name: {metric}}}, target: {{type: AverageValue, averageValue: "{target}"}}}}{behavior}
"""


def _history() -> str:
    series = []
    for pod in ("web-1", "web-2"):
        series.append(("bt_requests", {"namespace": "exact", "pod": pod},
                       [(T0 + STEP * i, float(v)) for i, v in enumerate(EXACT_PER_POD)]))
    series.append(("bt_requests", {"namespace": "exact", "pod": "other-1"}, [(T0, 1000.0)]))  # not web's
    series.append(("web_replicas", {"namespace": "exact"}, [(T0 + STEP * i, 2.0) for i in range(len(EXACT_PER_POD))]))
    noise = random.Random(11)
    load = [100 + noise.uniform(-30, 30) for _ in range(NOISY_TICKS)]  # total demand
    for pod in ("web-1", "web-2"):
        series.append(("bt_load", {"namespace": "noisy", "pod": pod}, [(T0 + STEP * i, v / 2) for i, v in enumerate(load)]))
        hole = [(T0 + STEP * i, 5.0) for i in range(240) if not 80 <= i < 140]  # 15 minutes without samples
        series.append(("bt_holey", {"namespace": "gappy", "pod": pod}, hole))
    return openmetrics(series)


BACKFILLED = {"prometheus": BackfilledPrometheus, "victoriametrics": BackfilledVictoriaMetrics}


@pytest.fixture(scope="module", params=sorted(BACKFILLED))
def prometheus(request: pytest.FixtureRequest) -> Iterator[BackfilledPrometheus]:
    with BACKFILLED[request.param](_history()) as server:
        yield server


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"rules": tmp_path / "rules.yaml", "exact": tmp_path / "exact.yaml", "fast": tmp_path / "fast.yaml",
           "slow": tmp_path / "slow.yaml", "holey": tmp_path / "holey.yaml", "unknown": tmp_path / "unknown.yaml"}
    out["rules"].write_text(RULES)
    out["exact"].write_text(_spec("exact", "exact", "bt_requests", down_window=60))
    out["fast"].write_text(_spec("fast-down", "noisy", "bt_load", down_window=0))
    out["slow"].write_text(_spec("slow-down", "noisy", "bt_load", down_window=600))
    out["holey"].write_text(_spec("holey", "gappy", "bt_holey"))
    out["unknown"].write_text(_spec("unknown", "exact", "bt_no_such_metric"))
    return out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _range(ticks: int) -> list[str]:
    return ["--from", str(T0), "--to", str(T0 + STEP * (ticks - 1))]


def test_short_history_replays_to_the_hand_computed_timeline(prometheus: BackfilledPrometheus,
                                                              files: dict[str, Path],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "-f", str(files["exact"]), "--prometheus-url", prometheus.url,
                          "--rules", str(files["rules"]), *_range(len(EXACT_PER_POD)), "-o", "json",
                          "--actual-replicas-query", 'sum(web_replicas{namespace="exact"})',
                          "--explain-at", str(T0 + 3 * STEP))
    assert code == 0, err
    body = json.loads(out)
    (run,) = body["runs"]
    assert [s["replicas"] for s in run["steps"]] == EXACT_REPLICAS
    assert [s["actualReplicas"] for s in run["steps"]] == [2.0] * len(EXACT_PER_POD)
    assert [(c["from"], c["to"]) for c in run["changes"]] == [(2, 6), (6, 1)]
    assert run["steps"][3]["limitedBy"] == "ScaleDownStabilized"
    assert run["metrics"][0]["query"] == 'sum(bt_requests{namespace="exact"}) by (pod)'
    assert run["metrics"][0]["assumption"].startswith("counterfactual")
    assert run["summary"]["replica_hours"] == pytest.approx(sum(EXACT_REPLICAS[:-1]) * STEP / 3600)  # ends at t8
    assert body["gaps"] == []
    assert "fetching history" in err


def test_the_text_summary_explains_the_asked_moment(prometheus: BackfilledPrometheus, files: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "-f", str(files["exact"]), "--prometheus-url", prometheus.url,
                        "--rules", str(files["rules"]), *_range(len(EXACT_PER_POD)),
                        "--actual-replicas", "2", "--explain-at", str(T0 + 3 * STEP))
    assert code == 0
    assert "scale events up / down" in out and "1 / 1" in out
    assert "stabilization window: 1 -> 6 (ScaleDownStabilized" in out  # the t3 trace


def test_a_longer_scale_down_window_flaps_less_and_compare_shows_both(
        prometheus: BackfilledPrometheus, files: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "report.html"
    code, out, err = _run(capsys, "-f", str(files["fast"]), "--compare", str(files["slow"]),
                          "--prometheus-url", prometheus.url, "--rules", str(files["rules"]),
                          *_range(NOISY_TICKS), "--actual-replicas", "2", "-o", "json", "--html", str(html),
                          "--node-allocatable", "cpu=4,memory=16Gi", "--pod-requests", "cpu=1,memory=1Gi")
    assert code == 0, err
    fast, slow = json.loads(out)["runs"]
    assert (fast["name"], slow["name"]) == ("fast-down", "slow-down")
    assert fast["summary"]["flaps"] > 10
    assert slow["summary"]["flaps"] < fast["summary"]["flaps"] / 3
    assert slow["summary"]["replica_hours"] > fast["summary"]["replica_hours"]  # holding on costs replicas
    assert slow["summary"]["peak_nodes"] == -(-slow["summary"]["max_replicas_seen"] // 4)
    series = _svg_series(html.read_text())
    for name in ("fast-down", "slow-down"):
        assert {f"replicas: {name}", f"scale events: {name}", f"metric 0: {name}", f"target 0: {name}",
                f"nodes: {name}"} <= series
    assert "replicas: actual" in series


class _Series(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.svgs = 0
        self.fetched: list[str] = []  # anything a browser would load: there must be nothing

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.svgs += tag == "svg"
        if tag in ("script", "link", "img", "iframe"):
            self.fetched.append(tag)
        for key, value in attrs:
            if key in ("src", "href"):
                self.fetched.append(f"{key}={value}")
            if key == "data-series" and value:
                self.names.add(value)


def _svg_series(text: str) -> set[str]:
    parser = _Series()
    parser.feed(text)
    parser.close()
    assert parser.svgs >= 3  # replicas, the metric, nodes
    assert parser.fetched == []
    return parser.names


def test_a_hole_in_the_history_is_reported_not_filled(prometheus: BackfilledPrometheus, files: dict[str, Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "-f", str(files["holey"]), "--prometheus-url", prometheus.url,
                          "--rules", str(files["rules"]), *_range(240), "-o", "json")
    assert code == 0, err
    body = json.loads(out)
    (gap,) = body["gaps"]
    # Samples stop after tick 79; Prometheus' 5 minute look-back carries the last one through
    # tick 99, so ticks 100..139 (10 minutes) have no value. VictoriaMetrics' 5 minute staleness
    # interval leaves out a sample exactly 5 minutes old: it carries it through tick 98 (41 syncs).
    syncs, length = (41, "(10m15s)") if isinstance(prometheus, BackfilledVictoriaMetrics) else (40, "(10m)")
    assert (gap["what"], gap["syncs"]) == ("Pods bt_holey (AverageValue)", syncs)
    steps = body["runs"][0]["steps"]
    assert all("no sample in history" in steps[i]["error"] for i in range(100, 140))
    assert {steps[i]["replicas"] for i in range(99, 141)} == {steps[99]["replicas"]}  # no scaling on a gap
    code, text, _ = _run(capsys, "-f", str(files["holey"]), "--prometheus-url", prometheus.url,
                         "--rules", str(files["rules"]), *_range(240))
    assert "history gaps (1;" in text and "Pods bt_holey (AverageValue)" in text and length in text


def test_a_metric_the_rules_cannot_resolve_is_named(prometheus: BackfilledPrometheus, files: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "-f", str(files["unknown"]), "--prometheus-url", prometheus.url,
                          "--rules", str(files["rules"]), *_range(10))
    assert code == 1 and out == ""
    assert "'bt_no_such_metric'" in err and "python -m adapter check-config" in err
