"""Run a real single-node VictoriaMetrics (the Debian `victoria-metrics` binary, 1.79 here) on
127.0.0.1 as a second backend for the adapter's tests: the same scrape config, lifecycle and
harness helpers as `LocalPrometheus`, whose Prometheus-compatible API it serves at the root.

Differences from Prometheus that matter to the tests (and to users, see docs/adapter.md):
- it hides the newest 30 s of samples from queries by default (`-search.latencyOffset`); the
  harness sets it to 1 s so a fresh sample is visible as soon as Prometheus would show it;
- `/-/ready` is served (Prometheus compatibility), and `/api/v1/status/runtimeinfo` is not, so
  the adapter's relist reads no start time from it (its health says only "ready");
- a fresh instance answers `rate()` with nothing until it holds two samples, as Prometheus does.

Non-goals: the cluster version (vmselect/vminsert, `/select/0/prometheus` prefixes), vmagent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hack.stack.local_prometheus import LocalPrometheus

__all__ = ["VICTORIA_METRICS_BINARY", "LocalVictoriaMetrics", "VictoriaMetricsNotInstalled"]

VICTORIA_METRICS_BINARY = (os.environ.get("VICTORIA_METRICS_BINARY") or shutil.which("victoria-metrics")
                           or "/usr/bin/victoria-metrics")  # as set-up finds it (hack/setup.sh)
INSTALL_HINT = ("VictoriaMetrics is not installed at {path}. Install it with `sudo apt-get install "
                "victoria-metrics` (Debian/Ubuntu; hack/setup.sh victoria-metrics does it), or point "
                "VICTORIA_METRICS_BINARY at a victoria-metrics binary.")


class VictoriaMetricsNotInstalled(RuntimeError):
    """The victoria-metrics binary is missing."""


class LocalVictoriaMetrics(LocalPrometheus):
    """One VictoriaMetrics process scraping `targets`; `LocalPrometheus`'s interface."""

    default_binary = VICTORIA_METRICS_BINARY
    install_hint = INSTALL_HINT
    not_installed = VictoriaMetricsNotInstalled
    _log_name = "victoria-metrics.log"

    def _command(self, config: Path) -> list[str]:
        return [
            self.binary,
            f"-promscrape.config={config}",
            "-promscrape.config.strictParse=false",  # Prometheus' evaluation_interval is not its field
            f"-storageDataPath={self.workdir / 'data'}",
            f"-httpListenAddr=127.0.0.1:{self.port}",
            "-search.latencyOffset=1s",
            "-loggerLevel=WARN",
            *self.extra_args,
        ]
