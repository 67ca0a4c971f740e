"""A real Prometheus holding a known history: OpenMetrics text -> `promtool tsdb
create-blocks-from openmetrics` -> `prometheus` on that data directory (127.0.0.1, free port).

Used by the backtest's integration tests and its benchmark (`hack/bench/backtest.py`): the
history is exactly what the caller wrote, at timestamps in the past, with no scraping.

`openmetrics(series)` renders `(name, labels, [(unix seconds, value), ...])` triples as gauges
(one family per name, each series' samples in time order, `# EOF`); `BackfilledPrometheus`
backfills that text and serves it. Non-goals: counters/histograms, remote storage.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hack.stack.local_prometheus import LocalPrometheus

__all__ = ["BackfilledPrometheus", "PROMTOOL", "openmetrics"]

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
