"""Child processes for the development tools and test fixtures: start with a log file, stop
politely, read the end of the log.

Prometheus, the API-server stand-in and the adapter are all run as real processes; this is the one
place that knows how to start one with its output in a file (so a chatty child never blocks on a
pipe), stop it with SIGTERM and then SIGKILL, and show the log tail when it fails to start.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["log_tail", "spawn_logged", "terminate"]


def spawn_logged(args: Sequence[str], log_file: Path, *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None,
                 preexec_fn: Callable[[], Any] | None = None) -> subprocess.Popen[bytes]:
    """Start `args` with stdout and stderr appended to `log_file` and no stdin."""
    with open(log_file, "ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, env=dict(env) if env is not None else None, preexec_fn=preexec_fn)


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
