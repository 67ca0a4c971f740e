"""Discovery and real queries against a real Prometheus scraping the sample exporter, with
prometheus-adapter's own configs (config-gen defaults: rate of counters, gauges, resource
rules; the deploy manifests' resource rules) and the demo's `_per_second` config."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapter.config.load import load_config
from adapter.discovery.registry import Registry
from adapter.discovery.relist import Discovery
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from adapter.rules import query
from adapter.rules.compile import CompiledConfig, compile_config
from adapter.rules.resources import GroupResource
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import demo_pods
from kubecommon.selectors import Selector, parse_selector
from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CONFIGS = Path(__file__).parent / "configs"
DEMO_CONFIG = REPO / "hack" / "demo" / "config.yaml"
PODS = GroupResource(group="", resource="pods")
SERVICES = GroupResource(group="", resource="services")
NAMESPACES = GroupResource(group="", resource="namespaces")
SHOP_PODS = [p.name for p in demo_pods() if p.namespace == "shop"]
NODES = sorted({p.node for p in demo_pods()})


def compiled_from(path: Path) -> CompiledConfig:
    return compile_config(load_config(path))


@pytest.fixture
async def client(prometheus: LocalPrometheus) -> AsyncIterator[PrometheusClient]:
    async with PrometheusClient(PrometheusSettings(url=prometheus.url, timeout=10)) as c:
        yield c


async def discover(client: PrometheusClient, compiled: CompiledConfig) -> Registry:
    discovery = Discovery(client, compiled, interval=600)
    assert await discovery.relist(), discovery.stats.last_error
    return discovery.snapshot


def exposed(registry: Registry) -> set[str]:
    # Other tests add their own short-lived `*test*` series to the shared exporter.
    return {f"{i.resource}/{i.metric}" for i in registry.custom_metrics() if "test" not in i.metric}


async def custom_values(client: PrometheusClient, registry: Registry, resource: GroupResource,
                        metric: str, namespace: str | None, names: list[str],
                        selector: Selector | None = None) -> dict[str, float]:
    entry = registry.lookup_custom(resource, metric, namespaced=namespace is not None)
    assert entry is not None, f"{resource}/{metric} not discovered"
    label = entry.rule.label_for(resource)
    promql = query.render_custom(entry.rule, series_name=entry.series_name, resource=resource,
                                 namespace=namespace, names=names,
                                 metric_selector=selector or Selector.empty())
    return {s.labels[label]: s.value for s in await client.query(promql)}  # type: ignore[index]


async def test_config_gen_default_rules(client: PrometheusClient) -> None:
    compiled = compiled_from(CONFIGS / "config-gen-default.yaml")
    registry = await discover(client, compiled)
    # 3 container rules share one seriesQuery, 3 "normal" rules another: 2 series calls.
    assert len(registry.series_by_query) == 2
    # The `<<.Resource>>` template maps every label naming a resource, including the `job`
    # label Prometheus adds to each target (-> jobs.batch), as prometheus-adapter does.
    templated = ("pods", "services", "namespaces", "jobs.batch")
    resources_of = {"cpu_usage": ("pods", "namespaces"),
                    "memory_working_set_bytes": ("pods", "namespaces"),
                    "http_requests": templated,
                    "http_requests_in_flight": templated,
                    "app_sessions_active": templated,
                    "queue_messages_ready": ("namespaces", "jobs.batch")}
    assert exposed(registry) == {f"{r}/{m}" for m, rs in resources_of.items() for r in rs}

    rates = await custom_values(client, registry, PODS, "http_requests", "shop", SHOP_PODS)
    assert set(rates) == set(SHOP_PODS) and all(v > 0 for v in rates.values())
    memory = await custom_values(client, registry, PODS, "memory_working_set_bytes", "shop",
                                 SHOP_PODS[:2])
    assert memory == {p.name: float(p.memory_bytes) for p in demo_pods()[:2]}
    in_flight = await custom_values(client, registry, SERVICES, "http_requests_in_flight",
                                    "shop", ["web", "cart"])
    assert in_flight == {"web": 20.0, "cart": 3.0}  # round(2 * rps) summed over each service's pods
    per_ns = await custom_values(client, registry, NAMESPACES, "queue_messages_ready", None,
                                 ["shop"])
    assert per_ns == {"shop": 49.0}


async def test_metric_selector_narrows_the_query(client: PrometheusClient) -> None:
    registry = await discover(client, compiled_from(CONFIGS / "config-gen-default.yaml"))
    all_codes = await custom_values(client, registry, PODS, "http_requests", "shop",
                                    ["web-7d9f8-abcde"])
    errors_only = await custom_values(client, registry, PODS, "http_requests", "shop",
                                      ["web-7d9f8-abcde"], parse_selector("code=500"))
    assert 0 < errors_only["web-7d9f8-abcde"] < all_codes["web-7d9f8-abcde"]


async def test_demo_config_per_second_and_external(client: PrometheusClient) -> None:
    registry = await discover(client, compiled_from(DEMO_CONFIG))
    overrides = ("pods", "services", "namespaces")
    assert exposed(registry) == {
        *(f"{r}/http_requests_per_second" for r in overrides),
        *(f"{r}/http_requests_in_flight" for r in overrides),
        *(f"{r}/app_sessions_active" for r in (*overrides, "jobs.batch")),  # template rule
    }
    assert [i.metric for i in registry.external_metrics()] == ["queue_messages_ready"]
    rates = await custom_values(client, registry, PODS, "http_requests_per_second", "payments",
                                ["api-66f4c-uvwxy", "api-66f4c-zabcd"])
    assert set(rates) == {"api-66f4c-uvwxy", "api-66f4c-zabcd"}
    ext = registry.lookup_external("queue_messages_ready")
    assert ext is not None
    promql = query.render_external(ext.rule, series_name=ext.series_name, namespace="shop",
                                   metric_selector=Selector.empty())
    samples = await client.query(promql)
    assert {s.labels["queue"]: s.value for s in samples} == {"orders": 42.0, "emails": 7.0}


@pytest.mark.parametrize(("config", "node_label"), [
    pytest.param("config-gen-default.yaml", "instance", id="config-gen resource rules"),
    pytest.param("deploy-manifests.yaml", "node", id="deploy manifests resource rules"),
])
async def test_resource_rules(client: PrometheusClient, config: str, node_label: str) -> None:
    rules = compiled_from(CONFIGS / config).resource
    assert rules is not None
    pods = [p for p in demo_pods() if p.namespace == "shop"]
    for resource in ("cpu", "memory"):
        promql = query.render_resource(rules, resource=resource, level="container",
                                       namespace="shop", names=[p.name for p in pods])
        labels = query.result_labels(rules, resource=resource, level="container")
        got = {(s.labels[labels.object_label], s.labels[labels.container_label or ""]): s.value
               for s in await client.query(promql)}
        assert set(got) == {(p.name, "app") for p in pods}
        if resource == "memory":
            assert got == {(p.name, "app"): float(p.memory_bytes) for p in pods}
        else:
            assert all(v > 0 for v in got.values())
        node_query = query.render_resource(rules, resource=resource, level="node",
                                           namespace=None, names=NODES)
        assert query.result_labels(rules, resource=resource, level="node").object_label == node_label
        nodes = {s.labels[node_label]: s.value for s in await client.query(node_query)}
        assert set(nodes) == set(NODES) and all(v > 0 for v in nodes.values())


async def test_fractional_timeout_is_accepted_by_prometheus(prometheus: LocalPrometheus) -> None:
    # Prometheus parses `timeout` as float seconds or an integer Go duration: "2.5s" is a 400.
    async with PrometheusClient(PrometheusSettings(url=prometheus.url, timeout=2.5)) as client:
        samples = await client.query("vector(1)")  # type: ignore[arg-type]
    assert [s.value for s in samples] == [1.0]


async def test_long_name_list_goes_as_post(client: PrometheusClient) -> None:
    # ~1,500 object names: a GET URL of ~40 KB that proxies reject (414); sent as a form POST.
    registry = await discover(client, compiled_from(CONFIGS / "config-gen-default.yaml"))
    names = [f"web-7d9f8-{i:05d}" for i in range(1500)] + SHOP_PODS
    rates = await custom_values(client, registry, PODS, "http_requests", "shop", names)
    assert set(rates) == set(SHOP_PODS)


async def test_a_chunked_answer_from_the_real_prometheus_is_read_whole(prometheus: LocalPrometheus,
                                                                       client: PrometheusClient) -> None:
    """Go's net/http frames an answer over its 4 KiB buffer as chunked: the instant-query client
    (`adapter.prometheus.http1`) reads every chunk, and the next query goes on the kept connection."""
    promql = '{__name__=~".+", __name__!~".*test.*"}'  # every series but other tests' short-lived ones
    async with aiohttp.ClientSession() as session, session.get(
            f"{prometheus.url}/api/v1/query", params={"query": promql},
            headers={"Accept-Encoding": "identity"}) as resp:
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        expected = {tuple(sorted(s["metric"].items())) for s in (await resp.json())["data"]["result"]}
    samples = await client.query(promql)  # type: ignore[arg-type]
    assert {tuple(sorted(s.labels.items())) for s in samples} == expected
    assert [s.value for s in await client.query("vector(1)")] == [1.0]  # type: ignore[arg-type]
