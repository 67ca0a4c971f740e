"""`make demo`, the autoscaling phase's terminal view: live on a TTY, appended lines otherwise.

On a terminal, a block of four lines (phase and load, the metric against its target, replicas and
what the controller wants, the one-line reason) is redrawn in place with ANSI cursor movement a few
times a second, with a spinner, and a progress bar while a window runs (the scale-down
stabilization window, the scale-up rate-limit period); scale events are printed above the block
and stay. Without a terminal (a pipe, a log, a test), one plain line is appended per controller
decision or change, carrying the same facts and the window's progress as "window 4/10 s".

Non-goals: reading anything (hack/demo/autoscale.py samples and passes `Frame`s in), colours
beyond bold, terminals without ANSI cursor movement.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TextIO

__all__ = ["Frame", "LiveView", "Progress"]

_SPINNER = "|/-\\"
_BAR = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """A running window: what it is, seconds elapsed and its length."""

    label: str
    elapsed: float
    total: float

    def bar(self) -> str:
        share = min(max(self.elapsed / self.total, 0.0), 1.0) if self.total > 0 else 1.0
        filled = round(share * _BAR)
        return (f"{self.label} [{'#' * filled}{'.' * (_BAR - filled)}] "
                f"{min(self.elapsed, self.total):.0f}/{self.total:.0f} s")

    def short(self) -> str:
        return f"{self.label} {min(self.elapsed, self.total):.0f}/{self.total:.0f} s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """What the view shows at one moment (None: not known yet)."""

    elapsed: float
    phase: str
    load: float
    metric: float | None
    target: float
    metric_name: str
    replicas: int | None
    desired: int | None
    reason: str  # "<limitingReason>: <message>", or what is being waited for
    decided: str | None  # the controller's decision time; a new one makes a plain line
    progress: Progress | None = None

    def metric_text(self) -> str:
        if self.metric is None:
            return f"{self.metric_name}: <not read yet> vs target {self.target:g} per pod"
        ratio = self.metric / self.target if self.target else 0.0
        return f"{self.metric_name}: {self.metric:.2f} vs target {self.target:g} per pod (ratio {ratio:.2f})"

    def replicas_text(self) -> str:
        have = "?" if self.replicas is None else str(self.replicas)
        want = "?" if self.desired is None else str(self.desired)
        return f"replicas {have}, controller wants {want}"

    def plain(self) -> str:
        window = f"  [{self.progress.short()}]" if self.progress is not None else ""
        return (f"{self.elapsed:6.1f}s  {self.phase:<10} load {self.load:5.1f}  {self.metric_text()}  "
                f"{self.replicas_text()}  {self.reason}{window}")

    def block(self, tick: int) -> list[str]:
        spin = _SPINNER[tick % len(_SPINNER)]
        lines = [f"{spin} {self.elapsed:5.1f}s  phase: {self.phase}  "
                 f"(load: {self.load:g} requests in flight across the app)",
                 f"  metric   {self.metric_text()}",
                 f"  scale    {self.replicas_text()}",
                 f"  reason   {self.reason}"]
        if self.progress is not None:
            lines.append(f"  waiting  {self.progress.bar()}")
        return lines


class LiveView:
    """Writes frames and permanent notes to `out`; `tty` picks redraw or append."""

    def __init__(self, out: TextIO, *, tty: bool) -> None:
        self._out = out
        self._tty = tty
        self._drawn = 0  # lines of the live block currently on screen
        self._tick = 0
        self._last_key: tuple[object, ...] | None = None
        self._last: Frame | None = None

    def note(self, text: str) -> None:
        """A line that stays (a scale event, a phase change)."""
        self._erase()
        self._out.write(text + "\n")
        if self._tty and self._last is not None:
            self._draw(self._last)
        self._out.flush()

    def show(self, frame: Frame) -> None:
        self._last = frame
        if self._tty:
            self._tick += 1
            self._erase()
            self._draw(frame)
        else:
            key = (frame.phase, frame.decided, frame.replicas, frame.desired, frame.reason)
            if key != self._last_key:
                self._out.write(frame.plain() + "\n")
            self._last_key = key
        self._out.flush()

    def close(self) -> None:
        """Leave the last frame on screen (TTY) and stop redrawing."""
        self._drawn = 0
        self._last = None
        self._out.flush()

    def _erase(self) -> None:
        if self._tty and self._drawn:
            self._out.write(f"\033[{self._drawn}F\033[J")  # to the block's first line, clear below
        self._drawn = 0

    def _draw(self, frame: Frame) -> None:
        width = max(shutil.get_terminal_size((100, 24)).columns - 1, 20)
        lines = frame.block(self._tick)
        for line in lines:
            self._out.write(line[:width] + "\n")  # never wrap: the redraw counts lines
        self._drawn = len(lines)
