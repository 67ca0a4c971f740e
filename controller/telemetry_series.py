"""`ObjectGauge`: a labelled gauge for per-object series, one dict entry per series (controller.telemetry).

Why: prometheus_client keeps each label child of a `Gauge` as a whole metric object with its own
value object and lock: 660 bytes a series (tracemalloc, 10,000 series of 3 labels, 0.26.0). The
controller shows 8 or more series per autoscaler (replicas, bounds, paused, delay ratio, each
metric's value and target), so at 10,000 autoscalers those children took ~50 MiB. Here a series
is one entry of a dict, label values -> number (93 bytes a series), read at scrape by a custom
collector, as client_python's docs suggest for state held elsewhere.
The API is the subset telemetry uses: `labels(*values).set(number)` and `remove(*values)`
(KeyError when absent, as `Gauge.remove`).

Non-goals: inc/dec, thread safety (the controller updates and scrapes on its event loop only),
multiprocess mode.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["ObjectGauge"]


class _Series:
    __slots__ = ("_key", "_values")

    def __init__(self, values: dict[tuple[str, ...], float], key: tuple[str, ...]) -> None:
        self._values, self._key = values, key

    def set(self, value: float) -> None:
        self._values[self._key] = float(value)


class ObjectGauge(Collector):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], *,
                 registry: CollectorRegistry) -> None:
        self._name, self._documentation, self._labelnames = name, documentation, tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        registry.register(self)

    def labels(self, *values: str) -> _Series:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: {len(values)} label values for labels {self._labelnames}")
        return _Series(self._values, tuple(str(v) for v in values))

    def remove(self, *values: str) -> None:
        del self._values[tuple(str(v) for v in values)]

    def __len__(self) -> int:
        return len(self._values)

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self._name, self._documentation, labels=self._labelnames)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for labels, value in self._values.items():
            family.add_metric(labels, value)
        yield family
