"""Benchmark: API-server stand-in start-up time and pod list latency with 10,000 pods.

    python -m hack.bench.standin_list [--pods N] [--lists N] [--starts N]

1. Start-up: wall time from spawning `hack/kube_standin.py --port 0` to its `ready` line
   (certificates, bootstrap objects, listener), best and median of --starts runs, with the CPU
   seconds the stand-in reports and, as baseline, an interpreter that only imports aiohttp.web
   (the machine's load average is printed: the wall figure scales with it). Bar: < 2 s.
2. Load: --pods pods (default 10,000) created over HTTPS by 32 concurrent clients (a realistic
   1.3 KiB pod with labels, resources and status); reports creations/s.
3. List latency, p50/p99 over --lists calls, through the `kubernetes` package:
   - raw: `list_namespaced_pod(..., _preload_content=False)` and the body read (transport + server);
   - decoded: the same call returning `V1PodList` models (what a Python controller pays).
   Baseline, same run, same client, same TLS: a trivial aiohttp handler returning the very
   bytes the stand-in served, from memory. The ratio stand-in/baseline is the stand-in's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from hack.stack.processes import spawn_until_line, terminate

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "bench"


def start_standin(directory: Path) -> tuple[subprocess.Popen[str], float, str, float]:
    """(process, wall seconds spawn->ready, URL, CPU seconds the stand-in reported)."""
    directory.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    proc, lines = spawn_until_line([sys.executable, str(REPO / "hack" / "kube_standin.py"), "--port", "0",
                                    "--kubeconfig", str(directory / "kubeconfig")],
                                   directory / "standin.log", "ready", cwd=REPO)
    wall = time.perf_counter() - t0
    url = next(line.split()[-1] for line in lines if line.startswith("serving on "))
    cpu = next((float(line.split(",")[1].split()[0]) for line in lines if line.startswith("startup: ")),
               float("nan"))
    return proc, wall, url, cpu


def python_aiohttp_floor() -> float:
    """Wall time of an interpreter that only imports aiohttp.web: the floor of any aiohttp server."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import aiohttp.web"], check=True)
    return time.perf_counter() - t0


def pod(i: int) -> dict[str, Any]:
    name = f"web-{i:05d}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web", "shard": str(i % 10),
                                                  "pod-template-hash": "7d9f8c6b5"},
                         "annotations": {"prometheus.io/scrape": "true"}},
            "spec": {"nodeName": "standin-node-0", "containers": [
                {"name": "app", "image": "registry.example.com/web:1.2.3",
                 "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                               "limits": {"cpu": "1", "memory": "512Mi"}}}]},
            "status": {"phase": "Running", "podIP": f"10.244.{i // 250}.{i % 250 + 1}",
                       "startTime": "2026-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:05Z"}]}}


async def load(url: str, token: str, ca: Path, n: int) -> float:
    ctx = ssl.create_default_context(cafile=str(ca))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(headers=headers,
                                     connector=aiohttp.TCPConnector(ssl=ctx, limit=32)) as s:
        async with s.post(f"{url}/api/v1/namespaces",
                          json={"metadata": {"name": NAMESPACE}}) as r:
            assert r.status == 201, await r.text()
        queue = list(range(n))

        async def worker() -> None:
            while queue:
                i = queue.pop()
                async with s.post(f"{url}/api/v1/namespaces/{NAMESPACE}/pods",
                                  data=json.dumps(pod(i))) as r:
                    assert r.status == 201, await r.text()
        await asyncio.gather(*(worker() for _ in range(32)))
    return n / (time.perf_counter() - t0)


class StaticServer:
    """The baseline: one aiohttp handler answering every GET with fixed bytes, same TLS."""

    def __init__(self, body: bytes, cert: Path, key: Path) -> None:
        self.body = body
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.loop = asyncio.new_event_loop()
        self.url = ""
        self._runner: web.AppRunner | None = None

    def start(self) -> None:
        ready = threading.Event()

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=self.body, content_type="application/json")

        async def run() -> None:
            app = web.Application()
            app.router.add_get("/{tail:.*}", handler)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ctx)
            await site.start()
            self.url = f"https://127.0.0.1:{self._runner.addresses[0][1]}"
            ready.set()
        threading.Thread(target=lambda: (self.loop.run_until_complete(run()),
                                         self.loop.run_forever()), daemon=True).start()
        ready.wait(10)

    def stop(self) -> None:
        assert self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


def client_for(url: str, token: str, ca: Path) -> Any:
    from kubernetes import client
    cfg = client.Configuration()
    cfg.host = url
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.CoreV1Api(client.ApiClient(cfg))


def timings(v1: Any, n: int, *, decoded: bool) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        if decoded:
            result = v1.list_namespaced_pod(NAMESPACE)
            assert result.items
        else:
            resp = v1.list_namespaced_pod(NAMESPACE, _preload_content=False)
            assert resp.data
        out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(name: str, standin: list[float], baseline: list[float]) -> None:
    s50, s99 = pct(standin, 0.5), pct(standin, 0.99)
    b50, b99 = pct(baseline, 0.5), pct(baseline, 0.99)
    print(f"list {name:8s} stand-in p50 {s50 * 1000:8.1f} ms  p99 {s99 * 1000:8.1f} ms | "
          f"baseline p50 {b50 * 1000:8.1f} ms  p99 {b99 * 1000:8.1f} ms | "
          f"ratio p50 {s50 / b50:5.2f}  p99 {s99 / b99:5.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--lists", type=int, default=20)
    p.add_argument("--starts", type=int, default=3)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        starts, cpus = [], []
        for i in range(a.starts):
            proc, seconds, _, cpu = start_standin(Path(tmp) / f"s{i}")
            starts.append(seconds)
            cpus.append(cpu)
            terminate(proc)
        baseline = python_aiohttp_floor()
        print(f"start-up to ready: wall best {min(starts):.3f} s  median "
              f"{statistics.median(starts):.3f} s  (bar < 2 s: "
              f"{'PASS' if statistics.median(starts) < 2 else 'FAIL'}); stand-in CPU median "
              f"{statistics.median(cpus):.3f} s; baseline `python -c 'import aiohttp.web'` "
              f"{baseline:.3f} s wall; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs")
        directory = Path(tmp) / "main"
        proc, _, url, _ = start_standin(directory)
        try:
            pki = directory / "kubeconfig.d"
            token = (pki / "admin.token").read_text().strip()
            rate = asyncio.run(load(url, token, pki / "ca.crt", a.pods))
            print(f"created {a.pods} pods: {rate:.0f} creations/s")
            v1 = client_for(url, token, pki / "ca.crt")
            body = v1.list_namespaced_pod(NAMESPACE, _preload_content=False).data
            print(f"list body: {len(body) / 1e6:.1f} MB, "
                  f"{len(json.loads(body)['items'])} items")
            static = StaticServer(body, pki / "apiserver.crt", pki / "apiserver.key")
            static.start()
            base = client_for(static.url, token, pki / "ca.crt")
            for decoded in (False, True):
                n = a.lists if not decoded else max(3, a.lists // 4)
                timings(v1, 1, decoded=decoded)  # warm connections and caches
                timings(base, 1, decoded=decoded)
                report("decoded" if decoded else "raw", timings(v1, n, decoded=decoded),
                       timings(base, n, decoded=decoded))
            static.stop()
        finally:
            terminate(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
