"""Map-backed `MetricsSource` for tests of the layers above the metrics APIs (reconcile, run).

Answers are set per (namespace, query), optionally narrowed to one pod selector; every call is
recorded in `calls` so a test can assert what was asked. An unanswered query observes a
`FetchFailure` worded like the API server's "not found", as a real adapter without that metric
would answer, so a test that forgets an answer sees a failed metric, never a made-up value.

Non-goals: simulating latency, the wire format or version discovery (`rest` and its tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.algorithm.spec import FetchFailure, Observation
from controller.metrics.source import MetricQuery, MetricsSource

__all__ = ["FakeMetricsSource", "ObservedCall"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ObservedCall:
    namespace: str
    query: MetricQuery
    pod_selector: str


@dataclass(slots=True, kw_only=True)
class FakeMetricsSource:
    """Answers from a map; `answer` / `forget` change it between syncs."""

    answers: dict[tuple[str, MetricQuery, str | None], Observation] = field(default_factory=dict)
    calls: list[ObservedCall] = field(default_factory=list)

    def answer(self, namespace: str, query: MetricQuery, observation: Observation, *,
               pod_selector: str | None = None) -> None:
        """Set what `observe` returns; `pod_selector=None` answers for any selector."""
        self.answers[(namespace, query, pod_selector)] = observation

    def forget(self, namespace: str, query: MetricQuery, *, pod_selector: str | None = None) -> None:
        self.answers.pop((namespace, query, pod_selector), None)

    async def observe(self, namespace: str, query: MetricQuery, *, pod_selector: str) -> Observation:
        self.calls.append(ObservedCall(namespace=namespace, query=query, pod_selector=pod_selector))
        found = self.answers.get((namespace, query, pod_selector))
        if found is None:
            found = self.answers.get((namespace, query, None))
        if found is None:
            return FetchFailure(message=f"the server could not find the metric {query.name} "
                                        f"({query.type}) in namespace {namespace}")
        return found


def _conforms(fake: FakeMetricsSource) -> MetricsSource:
    """Never called: lets mypy check that the fake satisfies the port."""
    return fake
