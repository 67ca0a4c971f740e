"""Child processes for the development tools and test fixtures: start with a log file, stop
politely, read the end of the log.

Prometheus, the API-server stand-in and the adapter are all run as real processes; this is the one
place that knows how to start one with its output in a file (so a chatty child never blocks on a
pipe), or with stdout read up to a readiness line (the stand-in's `ready`), stop it with SIGTERM and
then SIGKILL, and show the log tail when it fails to start; and that picks the port a child will
listen on (`free_port`).
"""

from __future__ import annotations

import queue
import random
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["free_port", "log_tail", "spawn_logged", "spawn_until_line", "terminate"]


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


#: where `free_port` looks first: below the kernel's ephemeral range (outgoing connections'
#: local ports), which starts at 32768 unless the machine says otherwise
_PICKED_PORTS_FLOOR = 10_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, for a child process to listen on.

    Picked at random below the kernel's ephemeral range when there is room: a port the kernel
    hands out (bind to port 0) is also what it hands to the next outgoing connection, so between
    this call and the child's bind, any client in the test run could take it as its local port
    and the child fails with "address already in use". Outside that range only another
    `free_port` caller can collide, one chance in tens of thousands.
    """
    low = _ephemeral_low()
    if low - _PICKED_PORTS_FLOOR >= 1000:
        chooser = random.SystemRandom()
        for _ in range(64):
            port = chooser.randrange(_PICKED_PORTS_FLOOR, low)
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
