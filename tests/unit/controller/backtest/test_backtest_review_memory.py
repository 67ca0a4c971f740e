"""Review of the history's memory: it grows with the range and the answer in hand, not pods x range.

An autoscaled Deployment gets new pod names at every scale-up and rollout, so a month of history
holds thousands of names. Folding them must not keep a per-tick array for every name ever seen.
"""

from __future__ import annotations

import re
import tracemalloc

from controller.algorithm.spec import MetricSpec, MetricTarget, TargetType
from controller.backtest.model import Accumulator, Grid
from controller.history.resolve import MetricQuery, QueryKind

GRID = Grid(start=0.0, step=15.0, count=100_000)  # 17 days at 15 s
SPEC = MetricSpec(type="Pods", name="rps", target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=1000))
QUERY = MetricQuery(index=0, spec=SPEC, kind=QueryKind.PER_POD, promql="q", object_label="pod")  # type: ignore[arg-type]


def test_many_short_lived_pods_cost_memory_for_their_samples_not_for_the_whole_range() -> None:
    acc = Accumulator.for_query(QUERY, GRID, re.compile("web-.*"))
    answers = [  # 20 range queries of 5,000 ticks; 10 pods live in each, named anew, two containers each
        [({"pod": f"web-{chunk}-{p}", "container": c}, [[GRID.time(chunk * 5_000 + k), "1"] for k in range(0, 5_000, 50)])
         for p in range(10) for c in ("app", "sidecar")]
        for chunk in range(20)]
    tracemalloc.start()
    try:
        for answer in answers:
            acc.add(answer)
        history = acc.history()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(history.pod_names) == 200
    assert (history.pods[0], history.pods[50], history.pods[1]) == (10, 10, 0)  # one count per pod, not per container
    assert history.total[0] == 20_000.0  # 10 pods x 2 containers x 1
    # the per-tick arrays (total, present, counts: 11 bytes x 100,000) and one answer's ticks; before,
    # a 100,000-byte array per pod name: 20 MB, and a Python loop over 20 million flags
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.0f} MiB: per-pod arrays over the whole range?"
