"""Benchmark: what the adapter adds on top of Prometheus for custom-metrics requests.

    python -m hack.bench.adapter_latency [--requests 300] [--concurrency 16] [--seconds 5]

Starts, in this run: the sample exporter with 100 pods (namespace `b100`) and 2,000 pods
(namespace `b2k`), a real Prometheus scraping it every second, the API-server stand-in holding
those pods, and the adapter (`python -m adapter`, TLS, delegated auth against the stand-in,
pods from its watch cache). Then it measures, from one aiohttp client with keep-alive:

* `pods/*/http_requests_per_second?labelSelector=app=app` over the 100 pods through the adapter
  (the HPA's request: its target's selector; TLS, bearer token authenticated through a cached
  TokenReview/SubjectAccessReview) versus the very request the
  adapter sends for it (the PromQL of `adapter.rules.query.render_custom`, same verb, parameters
  and encoding) sent straight to Prometheus' `/api/v1/query`: p50 and p99 of sequential
  requests (the two alternate, so drift hits both);
* the same request through `hack.bench.floor_proxy`, a zero-work aiohttp TLS proxy in its own
  process: what aiohttp, TLS and one more hop cost before the adapter does anything (for the
  2,000-pod namespace query too); and through the same process's minimal transformation
  (`/transform/...`: decode the answer, encode a MetricValueList, orjson both ways), the least
  an adapter in Python must add to that hop before authentication, caches and checks;
* throughput at concurrency 16 for a fixed time, each worker with its own query (a
  metricLabelSelector no series fails, so nothing can be shared and both sides send Prometheus
  one query per request), through the adapter, straight to Prometheus and through the floor
  proxy, interleaved in rounds so drift hits all three; the CPU seconds each process (adapter,
  Prometheus, floor proxy, this client) used per request in each run; then the same request from
  every worker (the adapter shares identical queries in flight), for context;
* the discovery document `GET /apis/custom.metrics.k8s.io/v1beta1`;
* the same request over the 2,000 pods (above the large-selection threshold the adapter queries
  the namespace and filters against its cache instead of a 2,000-name regex), next to that
  namespace query and the 2,000-name regex query sent straight to Prometheus.

Then the throughput with a query per worker once more with Prometheus on a CPU of its own and
every other process on the rest (`hack.bench.process_cpu.CpuLayout`; machines with two CPUs or
more), as in a cluster where Prometheus is its own pod.

Bars (issue #12): adapter throughput with a query per worker ≥ 0.9× direct Prometheus, with
Prometheus on its own CPU (sharing the CPUs, the ratio measures how two CPU-bound processes share
a core: it is printed as context); adapter 100-pod p50 ≤ 1.15× the zero-work TLS proxy's; adapter
2,000-pod p50 ≤ 1.2× the direct namespace query's. Exit status 1 when a bar is missed.
`--py-spy DIR` then records the adapter and the floor proxy under each load with py-spy
(speedscope files and a top-functions summary per load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import yaml  # noqa: E402

from hack.stack import metrics_stack  # noqa: E402
from hack.stack.local_prometheus import LocalPrometheus  # noqa: E402
from hack.stack.sample_exporter import FakePod, SampleExporter  # noqa: E402
from hack.bench.floor_proxy import FloorProxy  # noqa: E402
from hack.bench.adapter_profile import profile_loads  # noqa: E402
from hack.bench.adapter_report import Latency, Rate, report  # noqa: E402
from hack.bench.process_cpu import CpuLayout, CpuMeter, PySpy  # noqa: E402
from kubecommon import tls  # noqa: E402

METRIC = "http_requests_per_second"
SMALL, LARGE = ("b100", 100), ("b2k", 2000)
#: what the HPA controller sends with a pods metric: its scale target's selector (every pod here)
HPA_SELECTOR = "labelSelector=app%3Dapp"
Request = Callable[[], Awaitable[None]]


def _pods() -> list[FakePod]:
    nodes = [f"bench-node-{i}" for i in range(4)]
    return [FakePod(namespace=ns, name=f"app-{i:05d}", service="app", node=nodes[i % len(nodes)])
            for ns, count in (SMALL, LARGE) for i in range(count)]


def _promql(namespace: str, names: list[str] | None, metric_selector: str = "") -> str:
    """The query the adapter sends for the request (same renderer, same compiled rule)."""
    from adapter.config.load import parse_config
    from adapter.rules import query
    from adapter.rules.compile import compile_config
    from adapter.rules.resources import PODS
    from kubecommon.selectors import parse_selector

    compiled = compile_config(parse_config(metrics_stack.RULES, source="bench"))
    rule = next(r for r in compiled.custom if r.metric_name("http_requests_total") == METRIC)
    return query.render_custom(rule, series_name="http_requests_total", resource=PODS, namespace=namespace,
                               names=names, metric_selector=parse_selector(metric_selector))


async def _sequential(pairs: list[tuple[str, Request]], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name, _ in pairs}
    for _ in range(n):
        for name, call in pairs:
            started = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - started)
    return times


async def _throughput(calls: list[Request], seconds: float) -> tuple[int, float]:
    """(requests done, seconds) with one worker per call, each repeating its call until time is up."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(call: Request) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await call()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(call) for call in calls))
    return done, time.perf_counter() - started


async def _rates(targets: dict[str, list[Request]], seconds: float, rounds: int,
                 meter: CpuMeter) -> dict[str, Rate]:
    """Each target for `seconds` in all, in `rounds` interleaved slices (drift hits all alike)."""
    done = dict.fromkeys(targets, 0)
    wall = dict.fromkeys(targets, 0.0)
    per_round: dict[str, list[float]] = {name: [] for name in targets}
    cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(meter.pids, 0.0) for name in targets}
    for _ in range(rounds):
        for name, calls in targets.items():
            with meter.phase() as used:
                count, elapsed = await _throughput(calls, seconds / rounds)
            done[name] += count
            wall[name] += elapsed
            per_round[name].append(count / elapsed)
            for process in meter.pids:
                cpu[name][process] += used[process]
    return {name: Rate(per_second=done[name] / wall[name], rounds=tuple(per_round[name]),
                       cpu_ms={process: 1000 * used / max(done[name], 1) for process, used in cpu[name].items()})
            for name in targets}


def _getter(session: aiohttp.ClientSession, url: str, headers: dict[str, str], *,
            ssl_ctx: ssl.SSLContext | bool) -> Request:
    async def call() -> None:
        async with session.get(url, headers=headers, ssl=ssl_ctx) as resp:
            body = await resp.read()  # read, not decoded: the direct calls are not decoded either
            if resp.status != 200:
                raise RuntimeError(f"GET {url}: {resp.status} {body[:300]!r}")
    return call


async def _check_items(session: aiohttp.ClientSession, url: str, headers: dict[str, str],
                       ssl_ctx: ssl.SSLContext | bool, count: int) -> None:
    """Once, before timing: the answer really has a value for every selected pod."""
    async with session.get(url, headers=headers, ssl=ssl_ctx) as resp:
        items = (await resp.json())["items"]
    if len(items) != count:
        raise RuntimeError(f"GET {url}: {len(items)} items, expected {count}")


def _query_params(promql: str) -> str:
    """What the adapter puts in its instant-query URL: the PromQL and its default deadline."""
    from adapter.prometheus.settings import PrometheusSettings

    return urlencode([("query", promql), ("timeout", f"{PrometheusSettings().timeout:g}")])


def _direct(session: aiohttp.ClientSession, url: str, promql: str) -> Request:
    """The adapter's own request for `promql`, sent by the benchmark: same verb (GET unless the URL
    is too long), same parameters (`query`, `timeout`), same `Accept-Encoding: identity`."""
    from adapter.prometheus.settings import PrometheusSettings

    settings = PrometheusSettings(url=url)
    params = _query_params(promql)
    endpoint = f"{url}/api/v1/query"
    headers = {"Accept-Encoding": "identity"}
    post = len(endpoint) + 1 + len(params) > settings.max_get_url_length

    async def call() -> None:
        request = session.post(endpoint, data=params, headers={
            **headers, "Content-Type": "application/x-www-form-urlencoded"}) if post else \
            session.get(f"{endpoint}?{params}", headers=headers)
        async with request as resp:
            body = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"prometheus: {resp.status} {body[:300]!r}")
    return call


@dataclass(frozen=True, slots=True, kw_only=True)
class Targets:
    """Where the benchmark sends its requests."""

    adapter_url: str
    prometheus_url: str
    floor_url: str
    token: str


async def _measure(targets: Targets, args: argparse.Namespace, meter: CpuMeter,
                   spies: dict[str, PySpy], layout: CpuLayout) -> dict[str, Any]:
    ctx = tls.client_ssl_context(insecure=True)  # a self-signed serving cert for the Service name
    headers = {"Authorization": f"Bearer {targets.token}", "Accept": "application/json"}
    base = f"{targets.adapter_url}/apis/custom.metrics.k8s.io/v1beta1/namespaces"
    prometheus_url = targets.prometheus_url
    connector = aiohttp.TCPConnector(limit=args.concurrency * 4)
    async with aiohttp.ClientSession(connector=connector) as session:
        small_names = [f"app-{i:05d}" for i in range(SMALL[1])]
        for namespace, count in (SMALL, LARGE):
            await _check_items(session, f"{base}/{namespace}/pods/*/{METRIC}?{HPA_SELECTOR}", headers, ctx, count)
        small_url = f"{base}/{SMALL[0]}/pods/*/{METRIC}?{HPA_SELECTOR}"
        adapter_small = _getter(session, small_url, headers, ssl_ctx=ctx)
        adapter_large = _getter(session, f"{base}/{LARGE[0]}/pods/*/{METRIC}?{HPA_SELECTOR}", headers, ssl_ctx=ctx)
        direct_small = _direct(session, prometheus_url, _promql(SMALL[0], small_names))

        def floor(promql: str) -> Request:
            return _getter(session, f"{targets.floor_url}/api/v1/query?{_query_params(promql)}", {}, ssl_ctx=ctx)

        def transforming(promql: str) -> Request:
            return _getter(session, f"{targets.floor_url}/transform/api/v1/query?{_query_params(promql)}", {},
                           ssl_ctx=ctx)

        floor_small = floor(_promql(SMALL[0], small_names))
        floor_large = floor(_promql(LARGE[0], None))
        transform_small = transforming(_promql(SMALL[0], small_names))
        transform_large = transforming(_promql(LARGE[0], None))
        direct_large = _direct(session, prometheus_url, _promql(LARGE[0], None))
        # what an adapter that always lists names would send: a 2,000-name regex matcher
        regex_large = _direct(session, prometheus_url, _promql(LARGE[0], [f"app-{i:05d}" for i in range(LARGE[1])]))
        discovery = _getter(session, f"{targets.adapter_url}/apis/custom.metrics.k8s.io/v1beta1", headers,
                            ssl_ctx=ctx)
        pairs = [("adapter_100", adapter_small), ("direct_100", direct_small), ("floor_100", floor_small),
                 ("transform_100", transform_small),
                 ("adapter_2000", adapter_large), ("floor_2000", floor_large), ("transform_2000", transform_large),
                 ("direct_2000", direct_large), ("regex_2000", regex_large), ("discovery", discovery)]
        await _sequential(pairs, 20)  # warm-up: connections, caches, JIT-less Python paths
        times = await _sequential(pairs, args.requests)
        # The figure: each worker with its own query (a metricLabelSelector on a label no
        # series has, so the answer is the same): nothing can be shared and every side sends
        # Prometheus one query per request. Then the one request from every worker (the adapter
        # shares identical queries while in flight, by design), for context.
        own = [f"bench_worker!=w{i}" for i in range(args.concurrency)]
        own_loads = {
            "direct_100_own": [_direct(session, prometheus_url, _promql(SMALL[0], small_names, sel)) for sel in own],
            "floor_100_own": [floor(_promql(SMALL[0], small_names, sel)) for sel in own],
            "adapter_100_own": [_getter(session, f"{small_url}&metricLabelSelector={sel}", headers, ssl_ctx=ctx)
                                for sel in own]}
        await _rates(own_loads, 1.0, 1, meter)  # warm-up: a connection per worker everywhere
        rates = await _rates(own_loads, args.seconds, args.rounds, meter)
        if layout.can_separate:  # the same loads with Prometheus on a CPU of its own
            with layout.apart():
                await _rates(own_loads, 1.0, 1, meter)
                rates |= {f"{name}_apart": rate for name, rate in
                          (await _rates(own_loads, args.seconds, args.rounds, meter)).items()}
        rates |= await _rates({"direct_100": [direct_small] * args.concurrency,
                               "adapter_100": [adapter_small] * args.concurrency}, args.seconds, 1, meter)
        if spies:
            await profile_loads(spies, own_loads, {"100_sequential": adapter_small, "2000_sequential": adapter_large},
                                floor_small, seconds=max(args.seconds, 5.0))
    return {"latency": {name: Latency.of(values) for name, values in times.items()}, "throughput": rates}


def _wait_served(stack: metrics_stack.StandIn, namespace: str, count: int, timeout: float = 60.0) -> None:
    path = f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/*/{METRIC}"
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        result = stack.kubectl("get", "--raw", path, check=False)
        if result.returncode == 0 and len(json.loads(result.stdout)["items"]) == count:
            return
        last = (result.stderr or result.stdout)[:300]
        time.sleep(0.5)
    raise TimeoutError(f"the adapter did not serve {count} pods in {namespace} within {timeout}s: {last}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="sequential requests per target")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=6.0, help="duration of each throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved slices of each throughput run")
    parser.add_argument("--profile", metavar="FILE", help="run the adapter under cProfile, stats to FILE")
    parser.add_argument("--py-spy", metavar="DIR", help="then record the adapter and the floor proxy under each "
                                                        "load with py-spy, into DIR")
    args = parser.parse_args(argv)
    pods = _pods()
    exporter = SampleExporter().start()
    for i, pod in enumerate(pods):  # one counter per pod keeps the Python exporter's scrapes short
        exporter.set_counter("http_requests_total", {"namespace": pod.namespace, "pod": pod.name,
                                                     "service": pod.service, "method": "GET", "code": "200"},
                             rate=1.0 + (i % 10) / 10)
    prometheus = LocalPrometheus([exporter.address], scrape_interval="2s")
    profile = ("-m", "cProfile", "-o", str(Path(args.profile).resolve())) if args.profile else ()
    with tempfile.TemporaryDirectory(prefix="prom-autoscaler-bench-") as tmp:
        work = Path(tmp)
        floor: FloorProxy | None = None
        try:
            prometheus.start()
            prometheus.wait_for(f'count(rate(http_requests_total{{namespace="{LARGE[0]}"}}[1m])) >= {LARGE[1]}',
                                timeout=120)
            with metrics_stack.aggregated_adapter(
                    work, prometheus_url=prometheus.url, objects=metrics_stack.cluster_objects(pods, deployments=False),
                    adapter_options={"relist_interval": "60s", "python_args": profile}) as (standin, adapter):
                _wait_served(standin, SMALL[0], SMALL[1])
                _wait_served(standin, LARGE[0], LARGE[1])
                token = yaml.safe_load(standin.kubeconfig.read_text())["users"][0]["user"]["token"]
                print(f"prometheus {prometheus.url}, adapter {adapter.url}, {len(pods)} pods, "
                      f"{exporter.series_count()} series")
                floor = FloorProxy(workdir=work / "floor", cert_file=adapter.cert_file,
                                   key_file=adapter.cert_file.with_suffix(".key"),
                                   prometheus_url=prometheus.url).start()
                assert adapter.proc is not None and prometheus.pid is not None
                pids = {"adapter": adapter.proc.pid, "prometheus": prometheus.pid, "floor": floor.pid,
                        "client": os.getpid()}
                spies = {name: PySpy(Path(args.py_spy), pids[name]) for name in ("adapter", "floor")} \
                    if args.py_spy else {}
                layout = CpuLayout({**pids, "standin": standin.pid}, alone="prometheus")
                result = asyncio.run(_measure(Targets(adapter_url=adapter.url, prometheus_url=prometheus.url,
                                                      floor_url=floor.url, token=token), args, CpuMeter(pids),
                                              spies, layout))
        finally:
            if floor is not None:
                floor.stop()
            prometheus.close()
            exporter.stop()
    return 0 if report(result, args) else 1


if __name__ == "__main__":
    sys.exit(main())
