"""Run a real Prometheus server (the Debian `prometheus` binary) on 127.0.0.1 for tests, the
demo and benchmarks.

`LocalPrometheus` writes a config scraping the given targets, starts the binary with temp
storage on a free port, waits until it is ready and (optionally) until a first scrape landed,
and can be stopped and started again on the same port and storage (to test "Prometheus down,
then back"). Queries here use urllib: this module is for harnesses, not the adapter.

Non-goals: remote write, rule files, TLS/auth in front of Prometheus, anything off loopback.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from hack.stack.processes import free_port, log_tail, spawn_logged, terminate

__all__ = ["PROMETHEUS_BINARY", "LocalPrometheus", "PrometheusNotInstalled"]

# the one set-up found (hack/setup.sh: PROMETHEUS_BINARY, else prometheus on PATH)
PROMETHEUS_BINARY = os.environ.get("PROMETHEUS_BINARY") or shutil.which("prometheus") or "/usr/bin/prometheus"
INSTALL_HINT = (
    "Prometheus is not installed at {path}. Install it with `sudo apt-get install prometheus` "
    "(Debian/Ubuntu; then `sudo systemctl disable --now prometheus` if you do not want the system "
    "service), or point PROMETHEUS_BINARY at a prometheus 2.x binary."
)


class PrometheusNotInstalled(RuntimeError):
    """The prometheus binary is missing."""


def _die_with_parent_fn() -> Callable[[], None] | None:
    """Ask Linux to SIGTERM Prometheus when its parent dies (a killed test run or demo must not
    leave servers behind). The signal follows the forking THREAD, so only from the main one."""
    if threading.current_thread() is not threading.main_thread() or sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

    return preexec


class LocalPrometheus:
    """One Prometheus process; mutable lifecycle (start/stop/restart) on purpose."""

    # What a backend sharing this lifecycle sets (with `_command`): its binary, and the error when it is missing
    default_binary = PROMETHEUS_BINARY
    install_hint = INSTALL_HINT
    not_installed: type[RuntimeError] = PrometheusNotInstalled
    _log_name = "prometheus.log"

    def __init__(
        self,
        targets: Sequence[str],
        *,
        scrape_interval: str = "1s",
        scrape_timeout: str | None = None,
        port: int | None = None,
        workdir: str | Path | None = None,
        binary: str | None = None,
        extra_args: Sequence[str] = (),
        retention: str = "2h",
    ) -> None:
        self.targets = tuple(targets)
        self.scrape_interval = scrape_interval
        self.scrape_timeout = scrape_timeout or scrape_interval
        self.port = port or free_port()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="prom-autoscaler-prometheus-"))
        self.binary = binary or self.default_binary
        self.extra_args = tuple(extra_args)
        # Backfilled history (promtool blocks) needs a longer one: Prometheus drops blocks older than
        # `retention` before its newest block.
        self.retention = retention
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = self.workdir / self._log_name

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _write_config(self) -> Path:
        config = {
            "global": {
                "scrape_interval": self.scrape_interval,
                "scrape_timeout": self.scrape_timeout,
                "evaluation_interval": self.scrape_interval,
            },
            "scrape_configs": [
                {
                    "job_name": "sample",
                    # The exporter sets `instance`/`job` itself (cAdvisor/kubelet style labels).
                    "honor_labels": True,
                    "static_configs": [{"targets": list(self.targets)}],
                }
            ],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path

    def _command(self, config: Path) -> list[str]:
        """The command line serving `config` on `self.port` with storage in the workdir."""
        return [
            self.binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--web.enable-lifecycle",
            f"--storage.tsdb.retention.time={self.retention}",
            "--log.level=warn",
            *self.extra_args,
        ]

    def start(self, *, timeout: float = 30.0) -> Self:
        if not Path(self.binary).exists():
            raise self.not_installed(self.install_hint.format(path=self.binary))
        if self.running:
            return self
        self._proc = spawn_logged(self._command(self._write_config()), self._log, preexec_fn=_die_with_parent_fn())
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise RuntimeError(f"{Path(self.binary).name} exited during start:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{Path(self.binary).name} not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self, *, timeout: float = 15.0) -> None:
        proc, self._proc = self._proc, None
        terminate(proc, timeout)

    def restart(self) -> Self:
        self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self._log, lines)

    # -- harness helpers (synchronous) ----------------------------------------------------
    def api(self, path: str, params: dict[str, Any] | None = None, *, timeout: float = 10) -> Any:
        query = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"{self.url}{path}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body = json.load(resp)
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus {path}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        data = self.api("/api/v1/query", {"query": promql})
        return list(data["result"])

    def wait_for(self, promql: str, *, present: bool = True, timeout: float = 20.0) -> list[Any]:
        """Poll an instant query until it returns samples (or none, with present=False)."""
        deadline = time.monotonic() + timeout
        result: list[Any] = []
        while time.monotonic() < deadline:
            try:
                result = self.query(promql)
            except (urllib.error.URLError, OSError):
                result = []
            if bool(result) == present:
                return result
            time.sleep(0.1)
        state = "present" if present else "absent"
        raise TimeoutError(f"{promql!r} not {state} after {timeout}s (last: {result})")

    def wait_first_scrape(self, *, timeout: float = 30.0) -> None:
        self.wait_for('up{job="sample"} == 1', timeout=timeout)
