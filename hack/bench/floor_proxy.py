"""A zero-work HTTPS proxy to Prometheus' instant-query API: the floor under any aiohttp adapter.

    python -m hack.bench.floor_proxy --port PORT --cert-file CRT --key-file KEY --prometheus-url URL

`GET /api/v1/query?<params>` is forwarded as is (same parameters, identity encoding, one pooled
keep-alive session) and Prometheus' body is returned untouched. It serves TLS like the adapter
(same certificate, TLS 1.2 minimum, client certificate requested in the handshake) on the same
event loop (uvloop), but does nothing an adapter must do: no authentication, no routing beyond
one path, no object cache, no decoding or re-encoding of the answer.

`GET /transform/api/v1/query?<params>` does the same and then the least any custom-metrics
adapter must do with the answer: decode Prometheus' JSON and encode a `MetricValueList` of its
samples (orjson both ways, one dict per item, values as milli-quantities, the evaluation time as
RFC 3339), still with no authentication, object cache, checks or routing: the floor under an
adapter written in Python.

`hack.bench.adapter_latency` runs it (`FloorProxy`) in its own process next to the adapter, so the report can
separate what aiohttp, TLS and one more process hop cost from what the adapter's own work costs.
Benchmark-only: nothing in the product imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
import uvloop
from aiohttp import web

from hack.stack.processes import free_port
from hack.stack.processes import log_tail, spawn_logged, terminate
from kubecommon import kubetime, tls
from kubecommon.quantity import format_milli

ROOT = Path(__file__).resolve().parents[2]


async def _serve(args: argparse.Namespace) -> None:
    session = aiohttp.ClientSession(headers={"Accept-Encoding": "identity"})
    target = args.prometheus_url.rstrip("/") + "/api/v1/query"

    def proxy(encode: Callable[[bytes], bytes]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            async with session.get(f"{target}?{request.query_string}") as resp:
                body = await resp.read()
                return web.Response(status=resp.status, body=encode(body) if resp.status == 200 else body,
                                    content_type="application/json")
        return handle

    app = web.Application()
    app.router.add_get("/api/v1/query", proxy(lambda body: body))
    app.router.add_get("/transform/api/v1/query", proxy(metric_value_list))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    # The adapter's own serving context: TLS 1.2 minimum, a client certificate requested (here
    # checked against the serving bundle itself, as nothing authenticates with one).
    context = tls.server_ssl_context(args.cert_file, args.key_file,
                                     client_ca_pem=Path(args.cert_file).read_bytes())
    await web.TCPSite(runner, "127.0.0.1", args.port, ssl_context=context).start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await session.close()


def metric_value_list(answer: bytes, metric: str = "http_requests_per_second") -> bytes:
    """A custom-metrics `MetricValueList` (v1beta1) of an instant-query answer's samples, built
    with as little Python as an adapter can: one dict per item, orjson both ways."""
    samples = orjson.loads(answer)["data"]["result"]
    stamp = samples[0]["value"][0] if samples else 0.0
    when = kubetime.format_time(float(int(stamp)))
    items = [{"describedObject": {"kind": "Pod", "namespace": s["metric"].get("namespace", ""),
                                  "name": s["metric"].get("pod", ""), "apiVersion": "/v1"},
              "metricName": metric, "timestamp": when,
              "value": format_milli(int(float(s["value"][1]) * 1000)), "selector": None}
             for s in samples]
    return orjson.dumps({"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1",
                         "metadata": {}, "items": items})


class FloorProxy:
    """`hack.bench.floor_proxy` as a child process, serving with the adapter's certificate."""

    def __init__(self, *, workdir: Path, cert_file: Path, key_file: Path, prometheus_url: str) -> None:
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self._log = workdir / "floor-proxy.log"
        self._args = [sys.executable, "-m", "hack.bench.floor_proxy", f"--port={self.port}",
                      f"--cert-file={cert_file}", f"--key-file={key_file}", f"--prometheus-url={prometheus_url}"]
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> FloorProxy:
        self._log.parent.mkdir(parents=True, exist_ok=True)
        self._proc = spawn_logged(self._args, self._log, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while "ready" not in (self._log.read_text() if self._log.exists() else ""):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"floor proxy did not start:\n{log_tail(self._log)}")
            time.sleep(0.05)
        return self

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def stop(self) -> None:
        terminate(self._proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-file", required=True)
    parser.add_argument("--key-file", required=True)
    parser.add_argument("--prometheus-url", required=True)
    uvloop.run(_serve(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
