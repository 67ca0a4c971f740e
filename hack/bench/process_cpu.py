"""Where a benchmark's CPU went: per-process CPU seconds over a measured phase, and py-spy profiles.

`CpuMeter` reads `utime + stime` of named processes from `/proc/<pid>/stat` (all threads, so a Go
Prometheus counts whole) before and after a phase; divided by the requests done it says what one
request cost each process. On a machine with few cores this is what decides a throughput ratio:
when the cores are saturated, every CPU millisecond the adapter spends is one Prometheus or the
client cannot.

`PySpy` records a running Python process for the length of a `with` block (speedscope JSON and
a flat top-functions text summary), sampling without pausing it (`--nonblocking`); `areas` sums a
profile by area (the innermost frame that matches an area's rule names the sample).

py-spy samples wall time of the running thread: a process that wakes a peer with a socket write
on a loaded machine is often descheduled inside that write, so write calls collect samples that
are not CPU (on this benchmark the adapter's system CPU stayed under 10% of its total). Read the
areas as shares of the other samples.
`CpuLayout` runs a phase with Prometheus on a CPU of its own, as in a cluster where it is its own
pod: then a throughput ratio says whether the adapter limits what Prometheus can serve, not how
two processes share a core.

Benchmark-only: nothing in the product imports it. Linux only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15 of stat)


class CpuMeter:
    """CPU seconds per named process over one phase (`with meter.phase() as used: ...`)."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self.pids = dict(pids)

    @contextmanager
    def phase(self) -> Iterator[dict[str, float]]:
        used: dict[str, float] = {}
        before = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        started = time.perf_counter()
        yield used
        used.update({name: cpu_seconds(pid) - before[name] for name, pid in self.pids.items()})
        used["wall"] = time.perf_counter() - started


class CpuLayout:
    """Which CPUs the benchmark's processes may run on: all of them shared (the default), or one
    CPU for Prometheus alone and the rest for every other process (`apart`).

    Affinity is per thread on Linux, so every thread of each process is pinned (threads started
    later inherit it from the thread that starts them: a Go runtime's or the adapter's).
    """

    def __init__(self, pids: Mapping[str, int], *, alone: str) -> None:
        self.pids = dict(pids)
        self.alone = alone
        self.cpus = sorted(os.sched_getaffinity(0))

    @property
    def can_separate(self) -> bool:
        return len(self.cpus) >= 2

    @contextmanager
    def apart(self) -> Iterator[None]:
        """`alone` on the first CPU, every other process on the rest, for the `with` block."""
        first, rest = {self.cpus[0]}, set(self.cpus[1:])
        try:
            for name, pid in self.pids.items():
                _pin(pid, first if name == self.alone else rest)
            yield
        finally:
            for pid in self.pids.values():
                _pin(pid, set(self.cpus))


def _pin(pid: int, cpus: set[int]) -> None:
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:
            pass  # a thread that ended meanwhile


class PySpy:
    """py-spy record of `pid` for the length of `record(name)`, into `directory`."""

    def __init__(self, directory: Path, pid: int, *, rate: int = 250) -> None:
        exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not Path(exe).exists():
            raise RuntimeError("py-spy not found: pip install py-spy")
        self._exe = exe
        self.directory = directory
        self.pid = pid
        self.rate = rate
        directory.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def record(self, name: str) -> Iterator[None]:
        out = self.directory / f"{name}.speedscope.json"
        proc = subprocess.Popen(
            [self._exe, "record", "--pid", str(self.pid), "--rate", str(self.rate), "--nonblocking",
             "--format", "speedscope", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)  # attach before the load starts
        try:
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        if not out.exists():
            raise RuntimeError(f"py-spy wrote no profile: {err.decode(errors='replace')[-500:]}")
        (self.directory / f"{name}.top.txt").write_text(top_functions(out))


def top_functions(speedscope: Path, limit: int = 45) -> str:
    """Self and inclusive sample shares per function of a speedscope profile, highest first."""
    document = json.loads(speedscope.read_text())
    frames = document["shared"]["frames"]
    self_count: Counter[int] = Counter()
    total_count: Counter[int] = Counter()
    samples = 0
    for profile in document["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            samples += weight
            if stack:
                self_count[stack[-1]] += weight
            for frame in set(stack):
                total_count[frame] += weight

    def label(index: int) -> str:
        frame = frames[index]
        where = Path(frame.get("file") or "?")
        short = "/".join(where.parts[-2:])
        return f"{frame['name']} ({short}:{frame.get('line', '?')})"

    lines = [f"{samples} samples", "self%  total%  function"]
    for index, count in self_count.most_common(limit):
        lines.append(f"{100 * count / samples:5.1f}  {100 * total_count[index] / samples:6.1f}  {label(index)}")
    lines.append("\ninclusive (total%) top:")
    for index, count in total_count.most_common(limit):
        lines.append(f"{100 * count / samples:6.1f}  {label(index)}")
    return "\n".join(lines) + "\n"


#: (area, rule on a frame's function name and file); the first rule that matches wins
AreaRule = tuple[str, Callable[[str, str], bool]]


def areas(speedscope: Path, rules: Sequence[AreaRule], *, rest: str = "other") -> list[tuple[str, float]]:
    """Share of samples per area, highest first: each sample goes to the area of its innermost
    frame that matches a rule (`rest` when none does)."""
    document = json.loads(speedscope.read_text())
    frames = document["shared"]["frames"]
    shares: Counter[str] = Counter()
    total = 0.0
    for profile in document["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            total += weight
            area = rest
            for index in reversed(stack):
                frame = frames[index]
                name, file = frame["name"], frame.get("file") or ""
                match = next((label for label, rule in rules if rule(name, file)), None)
                if match is not None:
                    area = match
                    break
            shares[area] += weight
    return [(area, 100 * weight / total) for area, weight in shares.most_common()] if total else []
