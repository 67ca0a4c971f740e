"""One sync's metric reads, all at once: the reconciler asks for every `spec.metrics` entry of an
object in one call and gets one observation per entry back, failures included.

Kept apart from the port (`source`, pure data and protocol) because it runs the reads on the event
loop; kept out of reconcile so a sync reads as its steps, not as the fan-out of one of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from controller.algorithm.spec import FetchFailure, Observation
from controller.metrics.source import MetricQuery, MetricsSource
from kubecommon.kube.errors import KubeError

__all__ = ["observe_all"]


async def observe_all(source: MetricsSource, namespace: str, plans: Sequence[MetricQuery | FetchFailure], *,
                      pod_selector: str) -> tuple[Observation, ...]:  # fmt: skip
    """Every metric of one object at once, in `spec.metrics` order. A plan that could not be built
    stays the failure it is, and a source that raised becomes one, so one bad metric is an error
    the algorithm weighs (no scale-down on a failed fetch) instead of a sync that fails whole."""

    async def one(plan: MetricQuery | FetchFailure) -> Observation:
        if isinstance(plan, FetchFailure):
            return plan
        try:
            return await source.observe(namespace, plan, pod_selector=pod_selector)
        except (KubeError, OSError, asyncio.TimeoutError, ValueError) as err:
            return FetchFailure(message=f"unable to fetch metric {plan.name}: {err}")

    if len(plans) == 1:  # the common case: no task creation for one fetch
        return (await one(plans[0]),)
    return tuple(await asyncio.gather(*(one(plan) for plan in plans)))
