"""What prometheus-adapter's resource provider answers for one pod, rebuilt from a conformance
case's Prometheus answers: the deviation `half-measured-pod-left-out` adds back, in upstream's
shape, the pods this adapter leaves out.

Non-goals: the pods this adapter serves (they are compared as they are), nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubecommon.quantity import Format, Quantity

__all__ = ["upstream_pod"]


def upstream_pod(namespace: str, name: str, responses: Mapping[str, Any]) -> dict[str, Any]:
    """The PodMetrics view upstream builds for a pod from the case's Prometheus answers: every
    container seen in either query, NaN, negative and missing values 0, CPU in millicores."""
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    stamps = []
    for query, samples in responses.items():
        if f'namespace="{namespace}"' not in query:
            continue
        into = cpu if "cpu" in query else memory
        for item in samples:
            labels = item.get("labels", item.get("metric", {}))
            if labels.get("pod") == name and "container" in labels:
                value = float(item["value"])
                into[labels["container"]] = 0.0 if value != value or value < 0 else value
                stamps.append(item.get("timestamp_ms", 0))
    containers = [{"name": c, "usage": {"cpu": str(Quantity.from_milli(int(cpu.get(c, 0.0) * 1000))),
                                        "memory": str(Quantity.from_float(memory.get(c, 0.0), Format.BINARY_SI))}}
                  for c in sorted({*cpu, *memory})]
    return {"namespace": namespace, "name": name, "timestamp_ms": min(stamps), "window": "1m0s",
            "containers_unordered": containers}
