"""Benchmark: this project's aiohttp `KubeClient` against `kubernetes.aio` on the API-server stand-in.

    python -m hack.bench.kube_client [--pods N] [--lists N] [--gets N]

Two calls the controller makes, against the same stand-in over the same HTTPS, same event loop:
(a) LIST --pods pods (default 2,000) in one namespace; (b) one GET of a Deployment's `/scale`
(the call every sync makes). Clients:
- ours: `KubeClient.get` (decoded JSON as dicts, what our code reads);
- aio models: `kubernetes.aio` returning its pydantic models (what a program using it pays);
- aio raw: `kubernetes.aio` `*_without_preload_content` + `json.loads` (same output as ours: the
  transport and request-building cost alone).
Rounds interleave the clients (rotating order) so load swings hit each alike. Reported per
client: median and p90 wall ms, and median client CPU ms (`time.process_time`, this process only:
the stand-in's work is not counted). There is no bar: the figures decide whether our client stays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hack.bench.standin_list import NAMESPACE, load, start_standin
from hack.stack.processes import terminate
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config

Call = Callable[[], Awaitable[Any]]


def deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "app"}]}}}}


async def rounds(calls: dict[str, Call], n: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per client: (wall seconds, CPU seconds) of n calls, clients interleaved in rotating order."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in calls}
    names = list(calls)
    for name in names:  # warm connections, TLS sessions, caches
        await calls[name]()
    for i in range(n):
        for name in names[i % len(names):] + names[:i % len(names)]:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            await calls[name]()
            out[name][0].append(time.perf_counter() - wall0)
            out[name][1].append(time.process_time() - cpu0)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(title: str, results: dict[str, tuple[list[float], list[float]]]) -> None:
    base_wall = statistics.median(results["ours"][0])
    base_cpu = statistics.median(results["ours"][1])
    print(f"{title}:")
    for name, (walls, cpus) in results.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"  {name:11s} wall median {wall * 1000:8.2f} ms  p90 {pct(walls, 0.9) * 1000:8.2f} ms | "
              f"CPU median {cpu * 1000:8.2f} ms | vs ours: wall x{wall / base_wall:4.2f}, CPU x{cpu / base_cpu:4.2f}")


async def compare(kubeconfig: Path, pods: int, lists: int, gets: int) -> None:
    from kubernetes.aio import client as aio_client
    from kubernetes.aio import config as aio_config

    ours = KubeClient(load_kube_config(kubeconfig), timeout=60.0)
    await ours.start()
    cfg = aio_client.Configuration()
    # kubernetes.aio ships no annotations for these two: the calls are untyped, not wrong
    await aio_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
    api = aio_client.ApiClient(cfg)
    core, apps = aio_client.CoreV1Api(api), aio_client.AppsV1Api(api)
    try:
        await ours.post(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deployment())

        async def ours_list() -> None:
            assert len((await ours.get(f"/api/v1/namespaces/{NAMESPACE}/pods"))["items"]) == pods

        async def aio_list() -> None:
            assert len((await core.list_namespaced_pod(NAMESPACE)).items) == pods

        async def aio_list_raw() -> None:
            response = await core.list_namespaced_pod_without_preload_content(NAMESPACE)
            assert len(json.loads(await response.read())["items"]) == pods

        scale = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/web/scale"

        async def ours_scale() -> None:
            assert (await ours.get(scale))["spec"]["replicas"] == 3

        async def aio_scale() -> None:
            spec = (await apps.read_namespaced_deployment_scale("web", NAMESPACE)).spec
            assert spec is not None and spec.replicas == 3

        async def aio_scale_raw() -> None:
            response = await apps.read_namespaced_deployment_scale_without_preload_content("web", NAMESPACE)
            assert json.loads(await response.read())["spec"]["replicas"] == 3

        report(f"(a) LIST {pods} pods, {lists} rounds",
               await rounds({"ours": ours_list, "aio models": aio_list, "aio raw": aio_list_raw}, lists))
        report(f"(b) GET /scale, {gets} rounds",
               await rounds({"ours": ours_scale, "aio models": aio_scale, "aio raw": aio_scale_raw}, gets))
    finally:
        await api.close()  # type: ignore[no-untyped-call]
        await ours.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--lists", type=int, default=15)
    p.add_argument("--gets", type=int, default=200)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "standin"
        proc, _, url, _ = start_standin(directory)
        try:
            pki = directory / "kubeconfig.d"
            token = (pki / "admin.token").read_text().strip()
            rate = asyncio.run(load(url, token, pki / "ca.crt", a.pods))
            print(f"stand-in with {a.pods} pods ({rate:.0f} creations/s); load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            asyncio.run(compare(directory / "kubeconfig", a.pods, a.lists, a.gets))
        finally:
            terminate(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
