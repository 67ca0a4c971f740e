"""`make demo`'s autoscaling phase, run in --fast mode on the real stack (hack.stack.controller_stack):
the controller scales the sample app up and back down, the terminal says why, and the HTML page is
well-formed and holds the replica series the controller wrote.

While the phase runs, a thread reads the Deployment's replicas with kubectl (independently of the
demo's own sampling); the page's replica series and scale events must tell the same story, and
match the controller's SuccessfulRescale Events and its final status.lastDecision.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from hack.stack.controller_stack import ControllerStack, wait_until
from hack.demo.autoscale import FAST, run_autoscale


pytestmark = pytest.mark.integration

NS, APP = "demo", "web"
SVG = "{http://www.w3.org/2000/svg}"
_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}


class _Page(HTMLParser):
    """Checks that every element is closed in order; keeps the SVG and the embedded samples."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.errors: list[str] = []
        self.seen: set[str] = set()
        self.samples_json = ""
        self._in_samples = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        if tag not in _VOID:
            self.open.append(tag)
        self._in_samples = tag == "script" and ("id", "samples") in attrs

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
            return
        self.open.pop()
        self._in_samples = False

    def handle_data(self, data: str) -> None:
        if self._in_samples:
            self.samples_json += data


def _dedup(values: list[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


class _KubectlWatcher:
    """Reads spec.replicas of the Deployment with kubectl about three times a second."""

    def __init__(self, stack: ControllerStack) -> None:
        self.stack = stack
        self.seen: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            out = self.stack.kubectl("get", "deployment", APP, "-n", NS, "-o", "jsonpath={.spec.replicas}",
                                     check=False)
            if out.returncode == 0 and out.stdout.strip().isdigit():
                self.seen.append(int(out.stdout))
            self.stop.wait(0.3)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerStack]:
    started = ControllerStack.start(tmp_path_factory.mktemp("demo-stack"))
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="module")
def run(stack: ControllerStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    report = tmp_path_factory.mktemp("demo-report") / "autoscale.html"
    out = io.StringIO()
    watcher = _KubectlWatcher(stack)
    watcher.thread.start()
    try:
        code = run_autoscale(stack, scenario=FAST, out=out, tty=False, report=report, namespace=NS, name=APP)
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=10)
    pas = stack.get("promautoscalers.autoscaling.prom-autoscaler.io", NS, APP) or {}
    events = [e for e in stack.events(NS, APP) if e.get("reason") == "SuccessfulRescale"]
    return {"code": code, "out": out.getvalue(), "report": report, "kubectl": watcher.seen,
            "status": pas.get("status") or {}, "events": events}


@pytest.mark.timeout(150)
def test_terminal_shows_scale_up_and_down_with_reasons_and_explain(run: dict[str, Any]) -> None:
    out = run["out"]
    assert run["code"] == 0, out
    ups = re.findall(r"scaled up (\d+) -> (\d+): (\S.*)", out)
    downs = re.findall(r"scaled down (\d+) -> (\d+): (\S.*)", out)
    assert ups and downs, out
    assert all("above target" in reason for *_, reason in ups), ups
    assert any("ScaleUpLimit" in reason for *_, reason in ups), "the rate limit shows as the reason of a step"
    assert "below target" in downs[-1][2]
    assert "scale-down stabilization window" in out, "the wait for the window is shown"
    assert "$ prom-autoscaler-controller explain demo/web" in out
    assert f"Outcome: scaled: {downs[-1][0]} -> {downs[-1][1]} replicas" in out, "explain shows the last decision"
    assert "HTML report" in out and str(run["report"]) in out


@pytest.mark.timeout(30)
def test_page_is_well_formed_with_a_chart_and_reasons_on_hover(run: dict[str, Any]) -> None:
    page = Path(run["report"]).read_text()
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.open == [], (parser.errors, parser.open)
    assert {"html", "svg", "table", "script"} <= parser.seen
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", ""), "nothing fetched from the network"
    svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", page, re.DOTALL).group(0))  # type: ignore[union-attr]
    series = {p.get("data-series") for p in svg.iter(f"{SVG}polyline")}
    assert {"metric", "target", "replicas", "desired"} <= series
    markers = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "scale-event"]
    titles = [g.findtext(f"{SVG}title") or "" for g in markers]
    assert {g.get("data-direction") for g in markers} == {"up", "down"}
    assert all(re.search(r"scaled (up|down) \d+ -> \d+: \S", t) for t in titles), titles
    assert all("New size:" in t for t in titles), "each marker carries the controller's Event message"


@pytest.mark.timeout(30)
def test_page_holds_the_replica_series_the_controller_wrote(run: dict[str, Any]) -> None:
    page = Path(run["report"]).read_text()
    parser = _Page()
    parser.feed(page)
    data = json.loads(parser.samples_json)
    replicas = _dedup([s["replicas"] for s in data["samples"] if s["replicas"] is not None])
    assert replicas == _dedup(run["kubectl"]), "the page's /scale series is what kubectl saw"
    steps = [(e["from_replicas"], e["to_replicas"]) for e in data["events"]]
    assert steps == list(itertools.pairwise(replicas)), "one marked event per change of replicas"
    sizes = sorted((e.get("lastTimestamp") or "", int(re.match(r"New size: (\d+);", e["message"]).group(1)))
                   for e in run["events"])
    assert [to for _, to in steps] == [size for _, size in sizes], "the controller's SuccessfulRescale Events"
    last = run["status"]["lastDecision"]
    assert (last["currentReplicas"], last["desiredReplicas"]) == steps[-1]
    assert data["events"][-1]["rescale_reason"] == last["rescaleReason"]
    desired = _dedup([s["status_desired"] for s in data["samples"] if s["status_desired"] is not None])
    assert desired == replicas, "status.desiredReplicas went through the same counts"


@pytest.mark.timeout(60)
def test_kubectl_top_shows_every_pod_of_the_app_the_controller_scaled(run: dict[str, Any],
                                                                      stack: ControllerStack) -> None:
    """The pods the controller added are measured like the first ones (a user trying `kubectl top`
    after the demo sees every pod, not 'Metrics not available')."""
    pods = sorted(stack.kubectl("get", "pods", "-n", NS, "-l", f"app={APP}", "-o", "name").stdout.split())
    assert pods, "the app has pods"

    def measured() -> list[str]:
        top = stack.kubectl("top", "pod", "-n", NS, "-l", f"app={APP}", "--no-headers", check=False)
        return sorted(f"pod/{line.split()[0]}" for line in top.stdout.splitlines()) if top.returncode == 0 else []

    wait_until(lambda: measured() == pods, timeout=40, what=f"kubectl top showing {pods}")
