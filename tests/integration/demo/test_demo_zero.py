"""`make demo DEMO_ARGS=--zero`'s phase on the real stack (hack.stack.controller_stack): the queue worker
goes to 0 replicas when its queue empties and a burst wakes it 0 -> 4 in one step; the HTML page
shows both (the replica series hits 0 and comes back, both scales are marked with the controller's
ScaledToZero / WokenFromZero Event messages), and so do kubectl and the terminal.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.demo.zero import run_zero
from hack.stack.controller_stack import ControllerStack

from .test_demo_report import SVG, _dedup, _Page

pytestmark = pytest.mark.integration
NS, APP = "queue", "worker"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    stack = ControllerStack.start(tmp_path_factory.mktemp("zero-stack"))
    try:
        report = tmp_path_factory.mktemp("zero-report") / "zero.html"
        out = io.StringIO()
        code = run_zero(stack, out=out, tty=False, report=report, namespace=NS, name=APP)
        yield {"code": code, "out": out.getvalue(), "report": report, "replicas": stack.replicas(NS, APP),
               "reasons": [e.get("reason") for e in stack.events(NS, APP)]}
    finally:
        stack.close()


@pytest.mark.timeout(60)
def test_the_worker_goes_to_zero_and_a_burst_wakes_it_in_one_step(run: dict[str, Any]) -> None:
    out = run["out"]
    assert run["code"] == 0, out
    assert re.search(r"scaled down \d+ -> 0: ", out), out
    assert "scaled up 0 -> 4: " in out, "35 messages at 10 per pod: 0 -> 4 in one step"
    assert run["replicas"] == 4
    assert {"ScaledToZero", "WokenFromZero"} <= set(run["reasons"])


@pytest.mark.timeout(10)
def test_the_page_shows_replicas_at_zero_and_the_wake_marked(run: dict[str, Any]) -> None:
    page = Path(run["report"]).read_text()
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.open == [], (parser.errors, parser.open)
    data = json.loads(parser.samples_json)
    replicas = _dedup([s["replicas"] for s in data["samples"] if s["replicas"] is not None])
    assert 0 in replicas and replicas[-1] == 4, replicas
    assert replicas[replicas.index(0):] == [0, 4], "from 0 straight to 4"
    svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", page, re.DOTALL).group(0))  # type: ignore[union-attr]
    assert "load" in {p.get("data-series") for p in svg.iter(f"{SVG}polyline")}, "the queue depth is drawn"
    markers = {(g.get("data-from"), g.get("data-to")): g.findtext(f"{SVG}title") or ""
               for g in svg.iter(f"{SVG}g") if g.get("class") == "scale-event"}
    to_zero = [t for (_, to), t in markers.items() if to == "0"]
    assert to_zero and "ScaledToZero: scaling" in to_zero[0], markers
    assert "WokenFromZero: waking from 0 to 4 replicas" in markers[("0", "4")], markers
