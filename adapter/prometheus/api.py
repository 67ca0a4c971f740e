"""The port through which the adapter talks to Prometheus (owned by its consumers).

`PrometheusAPI` has the two reads the adapter needs (instant query, series) plus a streaming
series read that lets discovery look at each series once without keeping them all, and a health
read discovery uses to judge an empty answer (is the backend ready, since when does it hold data). A real
implementation lives in `client.py`, a map-backed one in `fake.py`.
Non-goals: range queries, label values, metadata, writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from adapter.rules.query import PromQL

__all__ = ["BackendHealth", "PrometheusAPI", "Sample", "SeriesSink"]

# Called once per series with its labels (including `__name__`). The dict is not reused.
SeriesSink = Callable[[dict[str, str]], None]


class Sample(NamedTuple):
    """One element of an instant vector (a scalar result becomes one with empty labels).

    A NamedTuple, not a frozen dataclass: answers carry thousands of samples and a tuple is built
    in a third of the time (measured on the custom-metrics hot path, `hack/bench/adapter_latency`).
    """

    labels: Mapping[str, str]
    value: float
    timestamp: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendHealth:
    """What the backend says about itself; None where it does not say (e.g. Thanos, Mimir)."""

    #: Prometheus' `/-/ready`: False while it starts (WAL replay) or shuts down
    ready: bool | None = None
    #: Unix time since which the backend has been scraping without a gap: shortly after its start
    #: (a Prometheus restarted, even on its old data, has a hole where it was down and until its
    #: first scrapes; one restarted on empty storage holds nothing older)
    covered_since: float | None = None
    #: False when a request now would meet an outage: no answer at all (connection refused, a
    #: timeout) or one saying it is unavailable (5xx, 429, e.g. `/-/ready` during WAL replay);
    #: an answer such as 401/403 from a proxy in front of `/-/ready` is reachable (None: unknown)
    reachable: bool | None = None


@runtime_checkable
class PrometheusAPI(Protocol):
    async def query(self, promql: PromQL, *, time: float | None = None) -> list[Sample]:
        """Run an instant query; `time=None` means Prometheus' "now"."""
        ...

    async def series(
        self, matchers: Sequence[str], *, start: float, end: float
    ) -> list[dict[str, str]]:
        """Label sets of the series matching any of `matchers` with samples in [start, end]."""
        ...

    async def series_foreach(
        self, matchers: Sequence[str], *, start: float, end: float, sink: SeriesSink
    ) -> int:
        """Like `series`, but hands each label set to `sink` as it is decoded; returns the count.

        Memory stays bounded by one series, not the whole answer (discovery over 100k+ series).
        """
        ...

    async def health(self) -> BackendHealth:
        """Readiness and data coverage; never raises for an unreachable backend (ready=False)."""
        ...
