"""A zero-work HTTPS proxy to Prometheus' instant-query API: the floor under any aiohttp adapter.

    python -m hack.bench.floor_proxy --port PORT --cert-file CRT --key-file KEY --prometheus-url URL

`GET /api/v1/query?<params>` is forwarded as is (same parameters, identity encoding, one pooled
keep-alive session) and Prometheus' body is returned untouched. It serves TLS like the adapter
(same certificate, TLS 1.2 minimum, client certificate requested in the handshake) on the same
event loop (uvloop), but does nothing an adapter must do: no authentication, no routing beyond
one path, no object cache, no decoding or re-encoding of the answer.

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
from pathlib import Path

import aiohttp
import uvloop
from aiohttp import web

from hack.stack.local_prometheus import free_port
from hack.stack.processes import log_tail, spawn_logged, terminate
from kubecommon import tls

ROOT = Path(__file__).resolve().parents[2]


async def _serve(args: argparse.Namespace) -> None:
    session = aiohttp.ClientSession(headers={"Accept-Encoding": "identity"})
    target = args.prometheus_url.rstrip("/") + "/api/v1/query"

    async def forward(request: web.Request) -> web.Response:
        async with session.get(f"{target}?{request.query_string}") as resp:
            body = await resp.read()
            return web.Response(status=resp.status, body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/api/v1/query", forward)
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
