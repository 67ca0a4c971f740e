"""The serving process's collector settings: large answers must not trigger full collections.

Run in a child interpreter: freezing and re-tuning the collector of the pytest process itself
would change every other test's memory behaviour.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

_CHILD = r"""
import gc, json, sys
from kubecommon.gctune import GC_THRESHOLDS, freeze_heap
from adapter.prometheus.answers import well_formed_vector
from adapter.services.custom_metrics import samples_by_name

if sys.argv[1] == "tuned":
    freeze_heap()
answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"pod": f"web-{i:05d}"}, "value": [1700000000.5, f"{i / 7:.6f}"]} for i in range(2000)]}}).encode()
kept = [{"pod": f"web-{i}"} for i in range(50_000)]  # long-lived objects, like the watch caches
counts = {0: 0, 1: 0, 2: 0}
gc.callbacks.append(lambda phase, info: counts.__setitem__(info["generation"], counts[info["generation"]] + 1)
                    if phase == "start" else None)
for _ in range(30):  # thirty 2,000-pod answers, each alive while it is turned into values
    samples = well_formed_vector(answer)  # what the client does with a well-formed answer
    assert samples is not None
    by_name = samples_by_name(samples, "pod")
    assert len(by_name) == 2000
print(json.dumps({"counts": counts, "threshold": list(gc.get_threshold()), "frozen": gc.get_freeze_count(),
                  "expected": list(GC_THRESHOLDS)}))
"""


def _run(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], cwd=REPO, check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return json.loads(out)


@pytest.mark.timeout(60)  # a child interpreter imports the adapter
def test_tuned_process_serves_large_answers_without_full_collections() -> None:
    tuned = _run("tuned")
    assert tuned["threshold"] == tuned["expected"]
    assert tuned["frozen"] > 1000  # modules and compiled code are out of the collector's reach
    assert tuned["counts"]["2"] == 0
    # 30 answers of ~12k containers each: a handful of young collections, not hundreds
    assert tuned["counts"]["0"] <= 10


@pytest.mark.timeout(60)
def test_default_collector_would_run_many_young_collections_for_the_same_work() -> None:
    """The baseline the tuning exists for (so the first test measures something real)."""
    default = _run("default")
    assert default["counts"]["0"] >= 100
