"""A selection above the large-selection threshold (100 objects) through the real stack: the adapter
queries the whole namespace instead of a name regex and filters against its pod cache; the values
must be exactly those the name-regex path returns for the same pods."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hack.stack.metrics_stack import cluster_objects
from hack.stack.sample_exporter import FakePod

from .conftest import Stack, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150),
              pytest.mark.standin_only("adds series to the local exporter and pods to the stand-in")]  # incl. stack start

NAMESPACE, COUNT = "big", 150
PATH = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}/pods/*/app_sessions_active"


@pytest.fixture(scope="module")
def big_namespace(stack: Stack) -> Iterator[list[str]]:
    pods = [FakePod(namespace=NAMESPACE, name=f"big-{i:03d}", service="big", node="node-a") for i in range(COUNT)]
    objects = [o for o in cluster_objects(pods, deployments=False) if o["kind"] in ("Namespace", "Pod")
               and o["metadata"]["name"] != "monitoring"]
    for i, obj in enumerate(o for o in objects if o["kind"] == "Pod"):
        obj["metadata"]["labels"]["tier"] = "a" if i < 80 else "b"  # 80: below the threshold
    for i, pod in enumerate(pods):
        stack.exporter.set_gauge("app_sessions_active", {"namespace": NAMESPACE, "pod": pod.name,
                                                         "service": "big"}, i + 0.5)
    stack.standin.create(objects)
    try:
        stack.prometheus.wait_for(f'count(app_sessions_active{{namespace="{NAMESPACE}"}}) == {COUNT}')
        wait_until(lambda: stack.item_count(PATH) == COUNT, timeout=30,
                   what="the adapter to serve every pod of the big namespace")
        yield [p.name for p in pods]
    finally:
        for pod in pods:
            stack.exporter.remove("app_sessions_active", {"namespace": NAMESPACE, "pod": pod.name, "service": "big"})
        stack.kubectl("delete", "pods", "--all", "-n", NAMESPACE, "--wait=false", check=False)


def _values(stack: Stack, path: str) -> dict[str, str]:
    return {i["describedObject"]["name"]: i["value"] for i in stack.raw_json(path)["items"]}


def test_namespace_query_answers_like_the_name_regex(stack: Stack, big_namespace: list[str]) -> None:
    everything = _values(stack, PATH)  # 150 objects: namespace-wide query, filtered by the cache
    tier_a = _values(stack, PATH + "?labelSelector=tier%3Da")  # 80 objects: name-regex query
    assert list(everything) == big_namespace
    assert everything == {name: f"{i * 1000 + 500}m" for i, name in enumerate(big_namespace)}
    assert tier_a == {name: everything[name] for name in big_namespace[:80]}
    tier_b = _values(stack, PATH + "?labelSelector=tier%3Db")
    assert list(tier_b) == big_namespace[80:], "objects outside the selection are filtered out"
