"""A zero-work HTTPS proxy to Prometheus' instant-query API: the floor under any aiohttp adapter.

    python -m hack.bench.floor_proxy --port PORT --cert-file CRT --key-file KEY --prometheus-url URL

`GET /api/v1/query?<params>` is forwarded as is (same parameters, identity encoding, one pooled
keep-alive session) and Prometheus' body is returned untouched. It serves TLS like the adapter
(same certificate, TLS 1.2 minimum, client certificate requested in the handshake) on the same
event loop (uvloop), but does nothing an adapter must do: no authentication, no routing beyond
one path, no object cache, no decoding or re-encoding of the answer.

`hack.bench.adapter_latency` runs it in its own process next to the adapter, so the report can
separate what aiohttp, TLS and one more process hop cost from what the adapter's own work costs.
Benchmark-only: nothing in the product imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import aiohttp
import uvloop
from aiohttp import web

from kubecommon import tls


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
