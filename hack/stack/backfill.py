"""A real Prometheus holding a known history: OpenMetrics text -> `promtool tsdb
create-blocks-from openmetrics` -> `prometheus` on that data directory (127.0.0.1, free port).

Used by the backtest's integration tests and its benchmark (`hack/bench/backtest.py`): the
history is exactly what the caller wrote, at timestamps in the past, with no scraping.

`openmetrics(series)` renders `(name, labels, [(unix seconds, value), ...])` triples as gauges
(one family per name, each series' samples in time order, `# EOF`); `BackfilledPrometheus`
backfills that text and serves it. `BackfilledVictoriaMetrics` serves the same text from a real
VictoriaMetrics: it has no promtool step, so the text goes to its `/api/v1/import/prometheus`
(Prometheus text, timestamps in milliseconds: the seconds are converted), then
`/internal/force_flush` makes it searchable. Non-goals: counters/histograms, remote storage.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.local_victoria_metrics import LocalVictoriaMetrics

__all__ = ["BackfilledPrometheus", "BackfilledVictoriaMetrics", "PROMTOOL", "openmetrics"]

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SeriesData = tuple[str, Mapping[str, str], Sequence[tuple[float, float]]]


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def openmetrics(series: Iterable[SeriesData]) -> str:
    by_name: dict[str, list[SeriesData]] = {}
    for item in series:
        by_name.setdefault(item[0], []).append(item)
    lines: list[str] = []
    for name, items in by_name.items():
        lines.append(f"# TYPE {name} gauge")
        for _name, labels, samples in items:
            text = _labels(labels)
            lines += [f"{name}{text} {value!r} {ts!r}" for ts, value in samples]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


class BackfilledPrometheus:
    """Backfill, then serve. Use as a context manager; `.url` while it runs."""

    def __init__(self, text: str, *, workdir: str | Path | None = None) -> None:
        self._own = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="prom-autoscaler-backfill-"))
        self._text = text
        self.server = LocalPrometheus([], workdir=self.workdir, retention="100y",
                                      extra_args=["--query.lookback-delta=5m"])

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> BackfilledPrometheus:
        source = self.workdir / "history.om"
        source.write_text(self._text)
        result = subprocess.run(
            [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
             str(source), str(self.workdir / "data")],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"promtool backfill failed: {result.stderr[-2000:]}")
        source.unlink()
        self.server.start()
        return self

    def close(self) -> None:
        self.server.stop()
        if self._own:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> BackfilledPrometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def prometheus_text_ms(text: str) -> str:
    """`openmetrics()` text (timestamps in seconds) as VictoriaMetrics' Prometheus import takes it (ms)."""
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, stamp = line.rsplit(" ", 1)
            line = f"{sample} {round(float(stamp) * 1000)}"
        out.append(line)
    return "\n".join(out) + "\n"


class BackfilledVictoriaMetrics(BackfilledPrometheus):
    """The same history in a real VictoriaMetrics (imported over HTTP, kept for 100 years)."""

    def __init__(self, text: str, *, workdir: str | Path | None = None) -> None:
        super().__init__(text, workdir=workdir)
        # Prometheus' 5 m look-back (BackfilledPrometheus' --query.lookback-delta): VictoriaMetrics derives
        # its own from the sample interval (15 s here) unless given a minimum.
        self.server = LocalVictoriaMetrics([], workdir=self.workdir,
                                           extra_args=["-retentionPeriod=100y", "-search.minStalenessInterval=5m"])

    def start(self) -> BackfilledVictoriaMetrics:
        self.server.start()
        body = prometheus_text_ms(self._text).encode()
        with urllib.request.urlopen(urllib.request.Request(
                f"{self.url}/api/v1/import/prometheus", data=body, method="POST"), timeout=60) as resp:
            resp.read()
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=30) as resp:
            resp.read()
        return self
