"""`/healthz`, `/livez`, `/readyz` (plain `ok`, k8s style) and `/version`.

Liveness says the process serves HTTP. Readiness additionally requires every readiness check
(first successful relist; authentication material loaded) so a new replica takes no traffic
before it can answer. `?verbose` lists the checks like kube-apiserver; a failing check answers
500 with the list (reasons withheld, as upstream does for unauthenticated probes). A passing
check may still have something to say (a stale metric registry and its age): `?verbose` shows
it after `ok`, without failing the probe (a Prometheus outage must not take every replica out
of the Service).

Non-goals: per-check sub-paths (`/readyz/<name>`).
"""

from __future__ import annotations

import json

from aiohttp import web

from adapter.server.context import CONTEXT

__all__ = ["register"]


async def _ok(request: web.Request) -> web.Response:
    if "verbose" in request.query:
        return web.Response(text=f"[+]ping ok\n{request.path.strip('/')} check passed\n")
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    checks = request.app[CONTEXT].readiness
    results = [(name, *check()) for name, check in sorted(checks.items())]
    healthy = all(ok for _, ok, _ in results)
    if healthy and "verbose" not in request.query:
        return web.Response(text="ok")
    lines = ["[+]ping ok"] + [(f"[+]{name} ok ({reason})" if reason else f"[+]{name} ok") if ok
                              else f"[-]{name} failed: reason withheld" for name, ok, reason in results]
    lines.append("readyz check passed" if healthy else "readyz check failed")
    return web.Response(status=200 if healthy else 500, text="\n".join(lines) + "\n")


async def _version(request: web.Request) -> web.Response:
    body = json.dumps(dict(request.app[CONTEXT].version), indent=2).encode()
    return web.Response(body=body, content_type="application/json")


def register(app: web.Application) -> None:
    app.router.add_get("/healthz", _ok)
    app.router.add_get("/livez", _ok)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/version", _version)
    app.router.add_get("/version/", _version)
