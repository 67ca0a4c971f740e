"""The profiling half of `hack.bench.adapter_latency`: py-spy records of the adapter under each
load it measures, and the areas (TLS, aiohttp, answer checks, services, encoding, ...) each
record's samples fall in, so a run says where the adapter's time went.

    python -m hack.bench.adapter_latency --py-spy DIR

Benchmark-only: nothing in the product imports it. Non-goals: the measurements themselves
(`adapter_latency`), the sampling machinery (`process_cpu`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from hack.bench.process_cpu import AreaRule, PySpy, areas

Request = Callable[[], Awaitable[None]]


async def profile_loads(spies: dict[str, PySpy], own_loads: dict[str, list[Request]],
                        sequential: dict[str, Request], floor_small: Request, *, seconds: float) -> None:
    """py-spy records of the adapter under each load (`spies["adapter"]`), and of the floor proxy
    under its own (`spies["floor"]`), `seconds` each; then the areas of each record, printed."""

    async def repeat(call: Request) -> None:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            await call()

    async def concurrently(calls: list[Request]) -> None:
        await asyncio.gather(*(repeat(call) for call in calls))

    for name, call in sequential.items():
        with spies["adapter"].record(f"adapter_{name}"):
            await repeat(call)
    with spies["floor"].record("floor_100_sequential"):
        await repeat(floor_small)
    with spies["adapter"].record("adapter_100_own_c16"):
        await concurrently(own_loads["adapter_100_own"])
    with spies["floor"].record("floor_100_own_c16"):
        await concurrently(own_loads["floor_100_own"])
    print(f"\npy-spy profiles in {spies['adapter'].directory} (share of samples per area, %; see process_cpu):")
    for path in sorted(spies["adapter"].directory.glob("*.speedscope.json")):
        shares = ", ".join(f"{area} {share:.0f}" for area, share in areas(path, _AREAS, rest="other") if share >= 1)
        print(f"  {path.name.removesuffix('.speedscope.json')}: {shares}")


def _in(*parts: str) -> Callable[[str, str], bool]:
    return lambda _name, file: any(part in file for part in parts)


# Where the adapter's time goes, innermost match first (a rule per area, product areas before the
# libraries they call).
_AREAS: list[AreaRule] = [
    ("socket write (mostly descheduled, see process_cpu)", _in("aiohttp/http_writer")),
    ("TLS", _in("/ssl.py")),
    ("decode Prometheus JSON", lambda name, file: name == "decode_body"),
    ("check answer", _in("adapter/prometheus/answers")),
    ("encode response", _in("render_metrics", "kubecommon/quantity")),
    ("service (objects, filter, values)", _in("adapter/services/")),
    ("PromQL render", _in("adapter/rules/")),
    ("authn/authz", _in("server/authn", "server/authz", "kube/reviews")),
    ("request glue (info, params, middleware, telemetry)", _in("adapter/server/", "adapter/discovery/")),
    ("Prometheus client", _in("adapter/prometheus/")),
    ("kubecommon (caches, LRU, selectors, singleflight)", _in("kubecommon/")),
    ("prometheus_client", _in("prometheus_client/")),
    ("aiohttp client", _in("aiohttp/client", "aiohttp/connector")),
    ("aiohttp server", _in("aiohttp/web")),
    ("aiohttp other", _in("aiohttp/", "multidict", "yarl")),
    ("event loop (incl. idle)", _in("asyncio/")),
]
