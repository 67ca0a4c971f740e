"""A small Prometheus exporter for tests, the demo and benchmarks.

It serves `/metrics` in the Prometheus text format (0.0.4) from an in-process thread on
127.0.0.1, for a handful of fake pods of a fake cluster:

* `http_requests_total{namespace,pod,service,method,code}`: counters that grow at a set rate;
* `http_requests_in_flight{namespace,pod,service}`, `app_sessions_active{...}`: gauges;
* cAdvisor-style `container_cpu_usage_seconds_total{namespace,pod,container,node}` and
  `container_memory_working_set_bytes{...}`, plus the node-level `id="/"` series with
  `instance=<node>` that prometheus-adapter's config-gen resource rules read;
* kubelet `/metrics/resource`-style `node_cpu_usage_seconds_total{node}` and
  `node_memory_working_set_bytes{node}` (the deploy manifests' resource rules);
* an external queue depth `queue_messages_ready{namespace,queue}`.

Tests set and remove series while Prometheus scrapes (`set_gauge`, `set_counter`, `remove`).
Label names `instance`/`job` are exported as-is, so scrape configs should use
`honor_labels: true`.

Synthetic mode (`load_synthetic(n)`) serves `n` static series spread over many metric names and
pods, pre-rendered once, for the relist benchmark.

Non-goals: histograms/summaries, exemplars, OpenMetrics negotiation, anything beyond loopback.

Run standalone:  python -m hack.stack.sample_exporter --port 9101 [--pods 6 | --synthetic 100000]
"""

from __future__ import annotations

import argparse
import http.server
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["FakePod", "SampleExporter", "demo_pods", "populate_demo", "render_synthetic"]

LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FakePod:
    """One fake pod with one application container."""

    namespace: str
    name: str
    service: str
    node: str
    container: str = "app"
    requests_per_second: float = 1.0
    cpu_cores: float = 0.1
    memory_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class _Series:
    kind: str  # "gauge" or "counter"
    value: float
    rate: float  # counters: growth per second since `since`
    since: float

    def current(self, now: float) -> float:
        if self.kind == "counter":
            return self.value + self.rate * max(0.0, now - self.since)
        return self.value


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_value(value: float) -> str:
    if value != value:  # NaN
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _labels_text(labels: LabelKey) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


class SampleExporter:
    """Thread-safe, mutable set of series served over HTTP on 127.0.0.1 (or `host`).

    Mutable on purpose (frozen=False semantics): tests change what Prometheus scrapes.
    """

    def __init__(self, *, port: int = 0, clock: Callable[[], float] = time.monotonic,
                 host: str = "127.0.0.1") -> None:
        self._port = port
        self._host = host
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[str, dict[LabelKey, _Series]] = {}
        self._static_body: bytes | None = None
        self._static_count = 0
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.scrapes = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> SampleExporter:
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

        self._server = http.server.ThreadingHTTPServer((self._host, self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sample-exporter", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    # -- series control -------------------------------------------------------------------
    def set_gauge(self, name: str, labels: Mapping[str, str], value: float) -> None:
        self._put(name, labels, _Series(kind="gauge", value=value, rate=0.0, since=0.0))

    def set_counter(
        self, name: str, labels: Mapping[str, str], *, rate: float, start: float = 0.0
    ) -> None:
        """A counter starting at `start` and growing by `rate` per second from now on."""
        self._put(name, labels, _Series(kind="counter", value=start, rate=rate, since=self._clock()))

    def remove(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Stop exporting one series, or every series of `name` when labels is None."""
        with self._lock:
            if labels is None:
                self._series.pop(name, None)
                return
            by_labels = self._series.get(name, {})
            by_labels.pop(_key(labels), None)
            if not by_labels:
                self._series.pop(name, None)

    def has(self, name: str, labels: Mapping[str, str]) -> bool:
        """Whether the series `name{labels}` is exported."""
        with self._lock:
            return _key(labels) in self._series.get(name, {})

    def series_count(self) -> int:
        with self._lock:
            if self._static_body is not None:
                return self._static_count
            return sum(len(v) for v in self._series.values())

    def load_synthetic(self, n: int, *, metrics: int = 100) -> None:
        """Serve `n` static series (see `render_synthetic`) instead of the mutable set."""
        body = render_synthetic(n, metrics=metrics)
        with self._lock:
            self._static_body = body
            self._static_count = n

    def _put(self, name: str, labels: Mapping[str, str], series: _Series) -> None:
        with self._lock:
            self._series.setdefault(name, {})[_key(labels)] = series

    # -- exposition -----------------------------------------------------------------------
    def render(self) -> bytes:
        with self._lock:
            self.scrapes += 1
            if self._static_body is not None:
                return self._static_body
            snapshot = {name: dict(by_labels) for name, by_labels in self._series.items()}
        now = self._clock()
        lines: list[str] = []
        for name in sorted(snapshot):
            by_labels = snapshot[name]
            kind = next(iter(by_labels.values())).kind
            lines.append(f"# TYPE {name} {kind}")
            for labels, series in sorted(by_labels.items()):
                lines.append(f"{name}{_labels_text(labels)} {_format_value(series.current(now))}")
        return ("\n".join(lines) + "\n").encode()


def _key(labels: Mapping[str, str]) -> LabelKey:
    return tuple(sorted(labels.items()))


def demo_pods() -> tuple[FakePod, ...]:
    """Six pods in two namespaces behind three services on two nodes."""
    return (
        FakePod(namespace="shop", name="web-7d9f8-abcde", service="web", node="node-a",
                requests_per_second=5.0, cpu_cores=0.25, memory_bytes=120 * 2**20),
        FakePod(namespace="shop", name="web-7d9f8-fghij", service="web", node="node-b",
                requests_per_second=3.0, cpu_cores=0.2, memory_bytes=110 * 2**20),
        FakePod(namespace="shop", name="web-7d9f8-klmno", service="web", node="node-a",
                requests_per_second=2.0, cpu_cores=0.15, memory_bytes=100 * 2**20),
        FakePod(namespace="shop", name="cart-5c6b7-pqrst", service="cart", node="node-b",
                requests_per_second=1.5, cpu_cores=0.1, memory_bytes=80 * 2**20),
        FakePod(namespace="payments", name="api-66f4c-uvwxy", service="api", node="node-a",
                requests_per_second=0.5, cpu_cores=0.05, memory_bytes=60 * 2**20),
        FakePod(namespace="payments", name="api-66f4c-zabcd", service="api", node="node-b",
                requests_per_second=0.5, cpu_cores=0.05, memory_bytes=64 * 2**20),
    )


def populate_demo(exporter: SampleExporter, pods: Iterable[FakePod] = ()) -> tuple[FakePod, ...]:
    """Export the realistic series listed in the module docstring for `pods`."""
    pods = tuple(pods) or demo_pods()
    nodes: dict[str, list[FakePod]] = {}
    for pod in pods:
        nodes.setdefault(pod.node, []).append(pod)
        base = {"namespace": pod.namespace, "pod": pod.name, "service": pod.service}
        exporter.set_counter("http_requests_total",
                             {**base, "method": "GET", "code": "200"},
                             rate=pod.requests_per_second * 0.9)
        exporter.set_counter("http_requests_total",
                             {**base, "method": "POST", "code": "500"},
                             rate=pod.requests_per_second * 0.1)
        exporter.set_gauge("http_requests_in_flight", base, round(pod.requests_per_second * 2))
        exporter.set_gauge("app_sessions_active", base, pod.requests_per_second * 10)
        container = {"namespace": pod.namespace, "pod": pod.name, "container": pod.container,
                     "node": pod.node}
        exporter.set_counter("container_cpu_usage_seconds_total", container, rate=pod.cpu_cores)
        exporter.set_gauge("container_memory_working_set_bytes", container, pod.memory_bytes)
    for node, node_pods in sorted(nodes.items()):
        cpu = sum(p.cpu_cores for p in node_pods) + 0.3  # system overhead
        memory = sum(p.memory_bytes for p in node_pods) + 512 * 2**20
        exporter.set_counter("node_cpu_usage_seconds_total", {"node": node}, rate=cpu)
        exporter.set_gauge("node_memory_working_set_bytes", {"node": node}, memory)
        # cAdvisor's machine-level cgroup, which config-gen's nodeQuery selects with id='/'.
        exporter.set_counter("container_cpu_usage_seconds_total",
                             {"id": "/", "instance": node}, rate=cpu)
        exporter.set_gauge("container_memory_working_set_bytes",
                           {"id": "/", "instance": node}, memory)
    for namespace, queue, depth in (("shop", "orders", 42), ("shop", "emails", 7),
                                    ("payments", "settlements", 3)):
        exporter.set_gauge("queue_messages_ready", {"namespace": namespace, "queue": queue}, depth)
    return pods


def render_synthetic(n: int, *, metrics: int = 100, namespaces: int = 20) -> bytes:
    """`n` gauge series: `metrics` names x ceil(n/metrics) pods, cAdvisor-like label sets.

    Half of the names look like cAdvisor container metrics (`container_synth_<k>_bytes`, with a
    `container` label), half like application metrics (`app_synth_<k>_total`), so prometheus-
    adapter's config-gen rules split them the way they would in a real cluster.
    """
    names = [
        f"container_synth_{k}_bytes" if k % 2 == 0 else f"app_synth_{k}_total"
        for k in range(metrics)
    ]
    chunks: list[str] = []
    for k, name in enumerate(names):
        count = n // metrics + (1 if k < n % metrics else 0)
        chunks.append(f"# TYPE {name} gauge\n")
        for p in range(count):
            ns = f"ns-{p % namespaces}"
            node = f"node-{p % 50}"
            extra = ',container="app"' if k % 2 == 0 else ""
            chunks.append(
                f'{name}{{namespace="{ns}",pod="pod-{p}-6b8c9d7f5-x2k4q",service="svc-{p % 200}",'
                f'instance="{node}",job="kubernetes-pods"{extra}}} {p % 97}\n'
            )
    return "".join(chunks).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=9101)
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (0.0.0.0 in a pod: make e2e on a cluster)")
    parser.add_argument("--pods", type=int, default=0, help="number of demo pods (0: the default six)")
    parser.add_argument("--synthetic", type=int, default=0, help="serve N synthetic series instead")
    args = parser.parse_args(argv)
    exporter = SampleExporter(port=args.port, host=args.host)
    if args.synthetic:
        exporter.load_synthetic(args.synthetic)
    else:
        pods = demo_pods()
        if args.pods:
            pods = tuple(
                FakePod(namespace=f"ns-{i % 3}", name=f"pod-{i}", service=f"svc-{i % 4}",
                        node=f"node-{i % 2}")
                for i in range(args.pods)
            )
        populate_demo(exporter, pods)
    exporter.start()
    print(f"serving {exporter.series_count()} series on {exporter.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        exporter.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
