"""The part every wrapper of a `python -m adapter` child process shares.

hack.stack.metrics_stack.AdapterProcess (demo, benchmark, end-to-end tests: the adapter wired to the
API-server stand-in) and tests.fixtures.adapter.RunningAdapter (integration tests: the adapter
alone, with requests made straight to it) build different command lines, but agree on where the
adapter listens, where its serving certificate and log are, how it is started and stopped, and how
to wait until a health path answers 200. That agreement lives here once.

Non-goals: building the command line, making requests.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hack.stack.processes import log_tail, spawn_logged, terminate
from kubecommon import tls

__all__ = ["AdapterChild"]

REPO = Path(__file__).resolve().parents[2]


class AdapterChild:
    """An adapter child listening on https://127.0.0.1:`port` with its files under `workdir`.

    Subclasses set `workdir`, `port` and `proc` (None until started)."""

    workdir: Path
    port: int
    proc: subprocess.Popen[bytes] | None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def cert_file(self) -> Path:
        """The serving certificate bundle (leaf + self-signed CA): trust it to verify the adapter."""
        return self.workdir / "certs" / "apiserver.crt"

    @property
    def log_file(self) -> Path:
        return self.workdir / "adapter.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def spawn(self, args: Sequence[str], *, python_args: Sequence[str] = (),
              env: Mapping[str, str] | None = None) -> None:
        """Start `python [python_args] -m adapter args` from the repository root, output to the log."""
        self.proc = spawn_logged([sys.executable, *python_args, "-m", "adapter", *args], self.log_file,
                                 cwd=REPO, env=env)

    def wait_for(self, path: str, *, timeout: float = 30.0) -> None:
        """Poll `path` (e.g. /healthz, /readyz) until it answers 200; the certificate is not
        checked here (the tests verify the chain where it matters)."""
        deadline = time.monotonic() + timeout
        context = tls.client_ssl_context(insecure=True)
        last = ""
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"adapter exited with {self.proc and self.proc.returncode}:\n{self.log_tail()}")
            connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=context)
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                if response.status == 200:
                    return
                last = f"{response.status} {response.read()[:200].decode(errors='replace')}"
            except OSError as err:
                last = str(err)
            finally:
                connection.close()
            time.sleep(0.05)
        raise TimeoutError(f"adapter {path} not OK after {timeout}s ({last}):\n{self.log_tail()}")

    def stop(self) -> int | None:
        """SIGTERM (then SIGKILL) by its own pid; returns the exit code, None if it was not started."""
        code = terminate(self.proc)
        self.proc = None
        return code

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log_file, lines)
