"""The demo's terminal view and HTML page without any process: what a user sees on a terminal
(the live block redrawn in place, scale lines kept above it), in a log (one line per decision), and
that the page stays well-formed whatever text the controller's reasons carry."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import pytest

from hack.demo.live import Frame, LiveView, Progress
from hack.demo.report import Recording, Sample, ScaleEvent, render_html, render_svg


def _frame(decided: str, replicas: int, reason: str = "DesiredWithinRange: ok",
           progress: Progress | None = None) -> Frame:
    return Frame(elapsed=1.0, phase="step up", load=95, metric=11.9, target=10, metric_name="rif",
                 replicas=replicas, desired=replicas, reason=reason, decided=decided, progress=progress)


def _screen(text: str) -> list[str]:
    """What a terminal shows after `text`: newlines, ESC[nF (up n lines, column 0), ESC[J (clear below)."""
    lines, row = [""], 0
    for token in re.split(r"(\x1b\[\d*[FJ]|\n)", text):
        if token == "\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token.startswith("\x1b[") and token.endswith("F"):
            row = max(row - int(token[2:-1] or 1), 0)
        elif token == "\x1b[J":
            del lines[row:]
            lines.append("")
        elif token:
            lines[row] += token
    return [line for line in lines if line]


def test_tty_redraws_one_block_and_keeps_notes_above_it() -> None:
    out = io.StringIO()
    view = LiveView(out, tty=True)
    view.show(_frame("t1", 4))
    view.show(_frame("t2", 8, "ScaleUpLimit: too fast", Progress(label="period", elapsed=3, total=9)))
    view.note("   scaled up 4 -> 8: above target")
    view.show(_frame("t3", 10))
    screen = _screen(out.getvalue())
    assert screen[0] == "   scaled up 4 -> 8: above target"
    assert sum("phase: step up" in line for line in screen) == 1, screen
    assert "replicas 10, controller wants 10" in screen[3]
    assert not any("period [" in line for line in screen), "the finished window's bar is gone"


@pytest.mark.parametrize(("frames", "expected"), [
    pytest.param([("t1", 4), ("t1", 4), ("t1", 4)], 1, id="same-decision-once"),
    pytest.param([("t1", 4), ("t2", 4), ("t2", 8)], 3, id="new-decision-or-replicas-each"),
])
def test_plain_output_appends_a_line_per_decision_or_change(frames: list[tuple[str, int]], expected: int) -> None:
    out = io.StringIO()
    view = LiveView(out, tty=False)
    for decided, replicas in frames:
        view.show(_frame(decided, replicas))
    assert len(out.getvalue().splitlines()) == expected
    assert "\x1b" not in out.getvalue()


def test_plain_line_carries_the_window_progress() -> None:
    line = _frame("t", 10, "ScaleDownStabilized: recent recommendations were higher",
                  Progress(label="scale-down stabilization window", elapsed=4.2, total=10)).plain()
    assert "ScaleDownStabilized" in line and "[scale-down stabilization window 4/10 s]" in line


@pytest.mark.parametrize("reason", [
    pytest.param('metric "x" <above> target & more', id="markup-characters"),
    pytest.param("", id="empty"),
    pytest.param("é ü → 中", id="non-ascii"),
])
def test_page_stays_well_formed_whatever_the_reason_says(reason: str) -> None:
    samples = [Sample(t=100 + i, phase="p", load=1, metric=None if i == 1 else 5.0, metric_time=None,
                      replicas=2 + i, status_current=2, status_desired=2 + i, reason=reason) for i in range(3)]
    event = ScaleEvent(t=101, time="2026-01-01T00:00:01Z", from_replicas=2, to_replicas=3, rescale_reason=reason,
                       limiting_reason="ScaleUpLimit", limiting_message=reason, event_message=reason)
    rec = Recording(namespace="ns", name="app", metric_name="m<1>", target=10, mode="fast", settings=reason,
                    started=100, finished=103, samples=samples, events=[event])
    svg = ET.fromstring(render_svg(rec))
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert any(f"scaled up 2 -> 3: {reason}" in t for t in titles)
    page = render_html(rec)
    assert page.count("<svg") == 1 and "</script>" in page
