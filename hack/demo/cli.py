"""`make demo`: phase 1, a local Prometheus, a sample app, and the adapter's discovery; phase 2
(hack/demo/served.py), the served API through the API-server stand-in's aggregation layer; phase 3
(hack/demo/autoscale.py), the controller autoscaling the sample app through a load step.

    python hack/demo.py [--fast] [--report PATH] [--config hack/demo/config.yaml] [--keep-running]
                        [--phase1-only | --no-autoscale] [--zero] [--backend prometheus|victoriametrics]

Starts the sample exporter (six fake pods in two namespaces on two nodes), a real Prometheus
scraping it every second (the Debian `prometheus` binary; nothing is installed here), then runs
the adapter's series discovery with a prometheus-adapter-style rule file and prints:

1. what the adapter would expose on custom.metrics.k8s.io, external.metrics.k8s.io and
   metrics.k8s.io, and
2. for example API requests, the PromQL it would run and the values Prometheus returns.

In phase 1 the object lists come from the fake pods (no Kubernetes API server is involved).
Phase 2 runs the stand-in with its workload simulator, registers the adapter with APIService
objects and prints real `kubectl get --raw` and `kubectl top` answers that went through
aggregation. Phase 3 creates a PromAutoscaler on shop/web, starts the controller, steps the app's
load up and down, shows the metric, the replicas and the controller's reason live, prints
`prom-autoscaler-controller explain` and writes an HTML chart of the run (`--fast`: short windows).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from adapter.config.errors import ConfigError
from adapter.config.load import load_config
from adapter.discovery.registry import Registry
from adapter.discovery.relist import Discovery
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from adapter.rules import query
from adapter.rules.compile import CompiledConfig, compile_config
from adapter.rules.resources import GroupResource
from hack.demo.served import Then
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.local_victoria_metrics import LocalVictoriaMetrics
from hack.stack.metrics_stack import AdapterProcess, StandIn
from hack.stack.sample_exporter import FakePod, SampleExporter, demo_pods, populate_demo
from kubecommon.quantity import format_bytes, format_cpu_cores, format_decimal
from kubecommon.selectors import Selector

ROOT = Path(__file__).resolve().parents[2]
_RESOURCES: tuple[Literal["cpu", "memory"], ...] = ("cpu", "memory")  # what the resource metrics API serves

CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
RESOURCE = "/apis/metrics.k8s.io/v1beta1"


def heading(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}")


def print_exposed(registry: Registry, compiled: CompiledConfig) -> None:
    heading(f"What the adapter exposes ({registry.series_count} series discovered)")
    print(f"custom.metrics.k8s.io ({len(registry.custom_metrics())} resources):")
    width = max((len(f"{i.resource}/{i.metric}") for i in registry.custom_metrics()), default=0)
    for info in registry.custom_metrics():
        entry = registry.lookup_custom(info.resource, info.metric, namespaced=info.namespaced)
        source = f"{entry.series_name} ({entry.rule.ref.location})" if entry else "?"
        scope = "namespaced" if info.namespaced else "cluster"
        print(f"  {f'{info.resource}/{info.metric}':<{width}}  {scope:<10}  from {source}")
    print(f"external.metrics.k8s.io ({len(registry.external_metrics())}):")
    for ext in registry.external_metrics():
        print(f"  {ext.metric}")
    if compiled.resource is not None:
        print(f"metrics.k8s.io: nodes, pods (window {compiled.resource.window})")


async def show_custom(client: PrometheusClient, registry: Registry, resource: GroupResource,
                      metric: str, namespace: str | None, names: list[str], path: str,
                      truth: dict[str, float] | None = None) -> None:
    print(f"\nGET {path}")
    entry = registry.lookup_custom(resource, metric, namespaced=namespace is not None)
    if entry is None:
        print("  -> 404: the server could not find the metric (not discovered)")
        return
    label = entry.rule.label_for(resource) or ""
    promql = query.render_custom(entry.rule, series_name=entry.series_name, resource=resource,
                                 namespace=namespace, names=names, metric_selector=Selector.empty())
    print(f"  PromQL: {promql}")
    for sample in sorted(await client.query(promql), key=lambda s: s.labels.get(label, "")):
        name = sample.labels.get(label, "?")
        known = f"   sample app's true rate: {truth[name]:g}/s" if truth and name in truth else ""
        print(f"    {resource.resource}/{name:<22} {format_decimal(sample.value):>10}   "
              f"({sample.value:.4g}){known}")


async def show_external(client: PrometheusClient, registry: Registry, metric: str,
                        namespace: str) -> None:
    print(f"\nGET {EXTERNAL}/namespaces/{namespace}/{metric}")
    entry = registry.lookup_external(metric)
    if entry is None:
        print("  -> 404 (not discovered)")
        return
    promql = query.render_external(entry.rule, series_name=entry.series_name,
                                   namespace=namespace if entry.rule.namespaced else None,
                                   metric_selector=Selector.empty())
    print(f"  PromQL: {promql}")
    for sample in await client.query(promql):
        print(f"    {dict(sample.labels)}  {format_decimal(sample.value)}")


async def show_resources(client: PrometheusClient, compiled: CompiledConfig,
                         pods: tuple[FakePod, ...]) -> None:
    rules = compiled.resource
    if rules is None:
        return
    namespace = "shop"
    names = [p.name for p in pods if p.namespace == namespace]
    print(f"\nGET {RESOURCE}/namespaces/{namespace}/pods   (kubectl top pods -n {namespace})")
    usage: dict[tuple[str, str], dict[str, str]] = {}
    for resource in _RESOURCES:
        promql = query.render_resource(rules, resource=resource, level="container",
                                       namespace=namespace, names=names)
        labels = query.result_labels(rules, resource=resource, level="container")
        print(f"  PromQL ({resource}): {promql}")
        for s in await client.query(promql):
            key = (s.labels.get(labels.object_label, "?"),
                   s.labels.get(labels.container_label or "", "?"))
            value = max(s.value, 0.0)
            usage.setdefault(key, {})[resource] = (
                format_cpu_cores(value) if resource == "cpu" else format_bytes(value))
    for (pod, container), values in sorted(usage.items()):
        print(f"    {pod:<22} {container:<6} cpu={values.get('cpu', '-'):<12} "
              f"memory={values.get('memory', '-')}")
    nodes = sorted({p.node for p in pods})
    print(f"\nGET {RESOURCE}/nodes   (kubectl top nodes)")
    for resource in _RESOURCES:
        promql = query.render_resource(rules, resource=resource, level="node", namespace=None,
                                       names=nodes)
        label = query.result_labels(rules, resource=resource, level="node").object_label
        print(f"  PromQL ({resource}): {promql}")
        for s in await client.query(promql):
            shown = format_cpu_cores(s.value) if resource == "cpu" else format_bytes(s.value)
            print(f"    {s.labels.get(label, '?'):<10} {resource}={shown}")


async def run_demo(prometheus: LocalPrometheus, compiled: CompiledConfig,
                   pods: tuple[FakePod, ...], *, repeat: float = 0.0) -> int:
    code = await run_once(prometheus, compiled, pods)
    while repeat and code == 0:
        print(f"\n(Prometheus: {prometheus.url}; next round in {repeat:g}s, Ctrl-C to stop)")
        await asyncio.sleep(repeat)
        code = await run_once(prometheus, compiled, pods)
    return code


async def run_once(prometheus: LocalPrometheus, compiled: CompiledConfig,
                   pods: tuple[FakePod, ...]) -> int:
    async with PrometheusClient(PrometheusSettings(url=prometheus.url, timeout=10)) as client:
        discovery = Discovery(client, compiled, interval=60)
        started = time.monotonic()
        if not await discovery.relist():
            print(f"discovery failed: {discovery.stats.last_error}", file=sys.stderr)
            return 1
        registry = discovery.snapshot
        print(f"relist: {len(registry.series_by_query)} /api/v1/series call(s) for "
              f"{len(compiled.custom) + len(compiled.external)} rules in "
              f"{time.monotonic() - started:.3f}s")
        print_exposed(registry, compiled)
        victoria = isinstance(prometheus, LocalVictoriaMetrics)
        heading("Example requests: the PromQL the adapter runs, and what "
                f"{'VictoriaMetrics' if victoria else 'Prometheus'} answers")
        print("(rates are rate(...[1m]); " + (
              "VictoriaMetrics does not extrapolate, so right after its start they can read high; "
              if victoria else "Prometheus extrapolates from the samples it has, so they read low until "
              "it has scraped for a minute; ") + "run with --keep-running to repeat this every 30 s and "
              "watch them settle)")
        shop = [p.name for p in pods if p.namespace == "shop"]
        pods_gr = GroupResource(group="", resource="pods")
        await show_custom(client, registry, pods_gr, "http_requests_per_second", "shop", shop,
                          f"{CUSTOM}/namespaces/shop/pods/*/http_requests_per_second",
                          truth={p.name: p.requests_per_second for p in pods})
        await show_custom(client, registry, GroupResource(group="", resource="services"),
                          "http_requests_in_flight", "shop", ["web"],
                          f"{CUSTOM}/namespaces/shop/services/web/http_requests_in_flight")
        await show_custom(client, registry, GroupResource(group="", resource="namespaces"),
                          "http_requests_per_second", None, ["payments"],
                          f"{CUSTOM}/namespaces/payments/metrics/http_requests_per_second")
        for ext in registry.external_metrics():
            await show_external(client, registry, ext.metric, "shop")
        await show_resources(client, compiled, pods)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _default_report() -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"prom-autoscaler-demo-{stamp}.html"


def _autoscale_phase(args: argparse.Namespace, exporter: SampleExporter, prometheus: LocalPrometheus,
                     workdir: Path) -> Then:
    def run(standin: StandIn, adapter: AdapterProcess) -> int:
        from hack.demo.autoscale import DEFAULT, FAST, attach_stack, run_autoscale
        from hack.demo.zero import run_zero

        scenario = FAST if args.fast else DEFAULT
        heading("Phase 3: scale to zero, a queue worker idles at 0 and wakes on a burst" if args.zero else
                f"Phase 3: the controller closes the loop ({scenario.mode} mode)")
        try:
            stack = attach_stack(workdir / "phase3", exporter, prometheus, standin, adapter)
            try:
                io = {"out": sys.stdout, "tty": sys.stdout.isatty(), "report": Path(args.report),
                      "keep_controller": args.keep_running}
                code = run_zero(stack, **io) if args.zero else run_autoscale(stack, scenario=scenario, **io)
                if args.keep_running and code == 0:
                    print(f"\nEverything stays up, the controller too; try: KUBECONFIG={standin.kubeconfig} "
                          "kubectl get promautoscalers -n shop -w (Ctrl-C to stop)")
                    while True:
                        time.sleep(3600)
                return code
            finally:
                stack.stop_controllers()  # also on Ctrl-C: no controller outlives the demo
        except (RuntimeError, TimeoutError, subprocess.SubprocessError) as err:
            print(f"\nphase 3 failed: {err}", file=sys.stderr)
            return 1

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="prom-autoscaler demo: discovery, the served API, autoscaling")
    parser.add_argument("--config", default=str(ROOT / "hack" / "demo" / "config.yaml"))
    parser.add_argument("--keep-running", action="store_true",
                        help="phase 1 only: keep Prometheus up and repeat the example requests every "
                             "30 s; with phase 2: keep the whole stack up until Ctrl-C")
    parser.add_argument("--phase1-only", action="store_true",
                        help="skip phases 2 and 3 (the stand-in, the served API, kubectl, the controller)")
    parser.add_argument("--no-autoscale", action="store_true", help="skip phase 3 (the controller)")
    parser.add_argument("--fast", action="store_true",
                        help="phase 3 with short windows: sync every 3 s, 10 s scale-down stabilization")
    parser.add_argument("--zero", action="store_true",
                        help="phase 3 as scale to zero: a queue worker (External metric, minReplicas 0) goes "
                             "to 0 when its queue empties and wakes on a burst")
    parser.add_argument("--backend", choices=("prometheus", "victoriametrics"), default="prometheus",
                        help="the metrics backend the adapter and the controller read (and that scrapes "
                             "the sample app every second)")
    parser.add_argument("--report", default=str(_default_report()),
                        help="where phase 3 writes its HTML page (default: a new file in the temp directory)")
    args = parser.parse_args(argv)
    backend = LocalVictoriaMetrics if args.backend == "victoriametrics" else LocalPrometheus
    if not Path(backend.default_binary).exists():
        print(backend.install_hint.format(path=backend.default_binary), file=sys.stderr)
        return 1
    try:
        compiled = compile_config(load_config(args.config))
    except ConfigError as err:
        print(f"invalid rule file: {err}", file=sys.stderr)
        return 1
    # SIGTERM (e.g. `timeout`, a closing terminal) must tear Prometheus down like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    exporter = SampleExporter().start()
    pods = populate_demo(exporter, demo_pods())
    prometheus = backend([exporter.address])
    try:
        heading("Starting")
        print(f"sample app: {exporter.series_count()} series for {len(pods)} fake pods at {exporter.url}")
        prometheus.start()
        print(f"{args.backend}: {prometheus.url} (pid {prometheus.pid}, 1s scrape, data in "
              f"{prometheus.workdir}); waiting for the first scrapes...")
        prometheus.wait_first_scrape()
        prometheus.wait_for("rate(http_requests_total[1m])")
        print(f"rule file: {args.config}")
        keep_phase1 = args.keep_running and args.phase1_only
        code = asyncio.run(run_demo(prometheus, compiled, pods, repeat=30.0 if keep_phase1 else 0.0))
        if code != 0 or args.phase1_only:
            return code
        from hack.demo.served import run_phase2

        with tempfile.TemporaryDirectory(prefix="prom-autoscaler-demo-") as workdir:
            then = None if args.no_autoscale else _autoscale_phase(args, exporter, prometheus, Path(workdir))
            return run_phase2(exporter, prometheus, Path(args.config), heading, Path(workdir),
                              keep_running=args.keep_running, then=then)
    except KeyboardInterrupt:
        return 0
    finally:
        exporter.stop()  # first: a scrape cut short by Prometheus' exit would print a BrokenPipeError
        prometheus.close()


