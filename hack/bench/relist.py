"""Benchmark: series discovery (relist) against a real Prometheus holding 100k / 300k series.

    python -m hack.bench.relist [--series 100000 300000] [--repeat 3]

For each size it starts the synthetic exporter (`hack.sample_exporter`, N series over 100
metric names: half cAdvisor-like `container_*`, half application metrics) and a real
Prometheus scraping it, waits until Prometheus holds all N series, and then measures, each in
a FRESH Python process so memory figures do not mix:

* `raw`: the baseline: the same `/api/v1/series` calls the relist makes (same matchers, same
  window), reading the body and nothing else: what Prometheus and the transfer cost;
* `naive`: raw + `json.loads` of the whole answer: what a client that materialises every label
  set pays (prometheus-adapter decodes every series into memory);
* `relist`: the adapter's `Discovery.relist()` with prometheus-adapter's config-gen default
  rules (two broad seriesQuery strings that together match all N series).

The two seriesQuery calls run concurrently in every mode, uncompressed, as the relist sends them.
Figures: wall time (median of `--repeat` runs) and peak RSS growth of the process over its
RSS before the first call (Linux VmHWM, reset through /proc/self/clear_refs).
Bar (issue #2): relist <= 3 s and RSS growth <= 100 MB at 100k series.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "tests" / "integration" / "adapter" / "configs" / "config-gen-default.yaml"
BAR_SECONDS = 3.0
BAR_MB = 100.0
MAX_AGE = 600.0


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


# -- child process ---------------------------------------------------------------------------
async def _child(mode: str, url: str, repeat: int) -> dict[str, Any]:
    import aiohttp

    from adapter.config.load import load_config
    from adapter.discovery.relist import Discovery
    from adapter.prometheus.client import PrometheusClient
    from adapter.prometheus.settings import PrometheusSettings
    from adapter.rules.compile import compile_config

    compiled = compile_config(load_config(CONFIG))
    queries = compiled.series_queries
    times: list[float] = []
    cpu: list[float] = []
    counts: list[int] = []
    async with PrometheusClient(PrometheusSettings(url=url, timeout=120)) as client, \
            aiohttp.ClientSession() as session:
        discovery = Discovery(client, compiled, interval=MAX_AGE, relist_timeout=300)
        gc.collect()
        base_kb = _status_kb("VmRSS")
        _reset_peak()
        for _ in range(repeat):
            started = time.perf_counter()
            cpu_started = time.process_time()
            if mode == "relist":
                if not await discovery.relist():
                    raise RuntimeError(discovery.stats.last_error)
                counts.append(discovery.snapshot.series_count)
            else:
                # Concurrently, as the relist sends them.
                counts.append(sum(await asyncio.gather(
                    *(_series_call(session, url, q, decode=mode == "naive") for q in queries))))
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
        peak_kb = _status_kb("VmHWM")
        registry = discovery.snapshot
    return {
        "mode": mode,
        "times": times,
        "median_s": statistics.median(times),
        "cpu_s": statistics.median(cpu),
        "rss_growth_mb": (peak_kb - base_kb) / 1024,
        "series": counts[-1],
        "metrics": len(registry) if mode == "relist" else None,
        "calls": len(queries),
    }


async def _series_call(session: Any, url: str, query: str, *, decode: bool) -> int:
    end = time.time()
    form = {"match[]": query, "start": f"{end - MAX_AGE:.3f}", "end": f"{end:.3f}"}
    headers = {"Accept-Encoding": "identity"}  # as the adapter's client asks for series
    async with session.post(f"{url}/api/v1/series", data=form, headers=headers) as resp:
        body = await resp.read()
    return len(json.loads(body)["data"]) if decode else len(body)


def _measure(mode: str, url: str, repeat: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "hack.bench.relist", "--child", mode, "--url", url,
         "--repeat", str(repeat)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{mode} child failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- parent: Prometheus + exporter per size ----------------------------------------------------
def _run_size(n: int, repeat: int) -> dict[str, Any]:
    from hack.stack.local_prometheus import LocalPrometheus
    from hack.stack.sample_exporter import SampleExporter

    exporter = SampleExporter()
    exporter.load_synthetic(n)
    exporter.start()
    prometheus = LocalPrometheus([exporter.address], scrape_interval="20s", scrape_timeout="15s")
    try:
        t0 = time.monotonic()
        prometheus.start()
        prometheus.wait_for(f'count({{job="kubernetes-pods"}}) == {n}', timeout=180)
        print(f"  prometheus holds {n} series (ingest took {time.monotonic() - t0:.1f}s)",
              flush=True)
        results = {mode: _measure(mode, prometheus.url, repeat)
                   for mode in ("raw", "naive", "relist")}
    finally:
        prometheus.close()
        exporter.stop()
    return results


def _report(n: int, r: dict[str, Any]) -> bool:
    raw, naive, relist = r["raw"], r["naive"], r["relist"]
    print(f"\n{n:,} series in Prometheus; {relist['calls']} /api/v1/series calls per relist "
          f"({relist['series']:,} series returned -> {relist['metrics']} registry entries)")
    print(f"  {'':<8} {'median s':>9} {'runs (s)':<30} {'CPU s':>6} {'peak RSS growth':>16}")
    for row in (raw, naive, relist):
        runs = " ".join(f"{t:.2f}" for t in row["times"])
        print(f"  {row['mode']:<8} {row['median_s']:>9.3f} {runs:<30} {row['cpu_s']:>6.2f} "
              f"{row['rss_growth_mb']:>13.1f} MB")
    ratio = relist["median_s"] / raw["median_s"]
    print(f"  relist / raw series call time: {ratio:.2f}x; relist RSS growth is "
          f"{relist['rss_growth_mb'] / max(naive['rss_growth_mb'], 0.1):.2f}x the naive decode's")
    ok = relist["median_s"] <= BAR_SECONDS and relist["rss_growth_mb"] <= BAR_MB
    if n == 100_000:
        print(f"  bar (<= {BAR_SECONDS:g} s, <= {BAR_MB:g} MB at 100k): {'PASS' if ok else 'FAIL'}")
    return ok or n != 100_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--series", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", choices=("raw", "naive", "relist"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.url, args.repeat))))
        return 0
    sys.path.insert(0, str(ROOT))
    ok = True
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]} "
          f"(wall times are only meaningful on an otherwise idle machine)")
    for n in args.series:
        print(f"== {n:,} series", flush=True)
        ok = _report(n, _run_size(n, args.repeat)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
