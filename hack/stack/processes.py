"""Child processes for the development tools and test fixtures: start with a log file, stop
politely, read the end of the log.

Prometheus, the API-server stand-in and the adapter are all run as real processes; this is the one
place that knows how to start one with its output in a file (so a chatty child never blocks on a
pipe), or with stdout read up to a readiness line (the stand-in's `ready`), stop it with SIGTERM and
then SIGKILL, and show the log tail when it fails to start.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["log_tail", "spawn_logged", "spawn_until_line", "terminate"]


def spawn_logged(args: Sequence[str], log_file: Path, *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None,
                 preexec_fn: Callable[[], Any] | None = None) -> subprocess.Popen[bytes]:
    """Start `args` with stdout and stderr appended to `log_file` and no stdin."""
    with open(log_file, "ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, env=dict(env) if env is not None else None, preexec_fn=preexec_fn)


def spawn_until_line(args: Sequence[str], log_file: Path, wanted: str, *, cwd: Path | None = None,
                     timeout: float = 30.0) -> tuple[subprocess.Popen[str], list[str]]:
    """Start `args` with stderr appended to `log_file` and stdout read by a thread; return once a
    stdout line equals `wanted`, with the lines read so far. The thread keeps draining stdout
    afterwards, so a chatty child never blocks on a full pipe. A child that exits first or stays
    silent past `timeout` is stopped, and the error shows its output."""
    with open(log_file, "ab") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                text=True, cwd=cwd)
    lines: list[str] = []
    seen: queue.Queue[bool] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.append(line)
                if line.strip() == wanted:
                    seen.put(True)
                    break
            for _ in proc.stdout:  # drain only: keep nothing of a long-running child's output
                pass
        except (OSError, ValueError):
            pass
        finally:
            proc.stdout.close()
            seen.put(False)

    threading.Thread(target=read, daemon=True, name=f"stdout-{proc.pid}").start()
    try:
        found = seen.get(timeout=timeout)
    except queue.Empty:
        found = None
    if not found:
        terminate(proc)
        state = f"exited ({proc.returncode})" if found is False else f"no {wanted!r} line after {timeout}s"
        raise RuntimeError(f"{' '.join(args[:2])} {state}:\n{''.join(lines[-30:])}{log_tail(log_file, 30)}")
    return proc, list(lines)


def terminate(proc: subprocess.Popen[Any] | None, timeout: float = 10.0) -> int | None:
    """SIGTERM, wait up to `timeout`, then SIGKILL; returns the exit code (None without a process)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    return proc.returncode


def log_tail(log_file: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log, or "" when it cannot be read."""
    try:
        return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
