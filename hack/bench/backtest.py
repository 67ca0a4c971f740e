"""Benchmark: `backtest` over 7 days at a 15 s step against a local Prometheus (issue 11).

    python -m hack.bench.backtest [--days 7] [--pods 4] [--prediction]

Setup (not timed): a week of history for one Deployment's pods — per-pod CPU (resourceRules),
a per-pod request rate (a Pods rule), a queue depth (an externalRules entry) and the actual
replica count — backfilled with promtool into a real Prometheus on 127.0.0.1. Then, in a child
process so its peak RSS is the backtest's alone, the backtest of a spec with those three metrics
(Resource cpu Utilization, Pods AverageValue, External AverageValue) is run and timed by phase:

* fetch: series discovery + chunked concurrent range queries, folded into per-tick arrays;
* decide: 40,321 syncs of `decide`/`complete` on the simulated clock, plus the summary;
* render: text, JSON and HTML reports.

`--prediction` adds `spec.prediction: {mode: Active, horizonSeconds: 180}`: every sync then also
asks the forecaster for each metric (the External queue depth, the request rate and the CPU), as
the live controller would, and decide includes that.

Bars (issue 11): decide <= 10 s and the whole run <= 30 s; with --prediction (issue 24) the whole
run <= 30 s. Exit status 1 when one is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hack.stack.backfill import BackfilledPrometheus, openmetrics

BAR_DECIDE_S, BAR_TOTAL_S = 10.0, 30.0
STEP = 15
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z

RULES = """
rules:
- seriesQuery: 'http_requests_per_second{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
resourceRules:
  cpu:
    containerQuery: 'sum(container_cpu_cores{<<.LabelMatchers>>,container!=""}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(container_memory_bytes{<<.LabelMatchers>>,container!=""}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
"""

SPEC = """
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 40
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: Pods
    pods: {metric: {name: http_requests_per_second}, target: {type: AverageValue, averageValue: "50"}}
  - type: External
    external: {metric: {name: queue_messages_ready}, target: {type: AverageValue, averageValue: "30"}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 300}
"""
PREDICTION = """  prediction: {mode: Active, horizonSeconds: 180}
"""


def history(days: int, pods: int) -> str:
    """A daily wave with noise; per-pod values as `pods` replicas would have measured them."""
    ticks = days * 86400 // STEP + 1
    series = []
    wave = [1.0 + 0.8 * math.sin(2 * math.pi * i * STEP / 86400) + 0.15 * math.sin(i * 0.7) for i in range(ticks)]
    times = [T0 + i * STEP for i in range(ticks)]
    for p in range(pods):
        labels = {"namespace": "shop", "pod": f"web-7d9f-{p}"}
        series.append(("container_cpu_cores", {**labels, "container": "app"},
                       [(t, round(0.5 * w, 4)) for t, w in zip(times, wave, strict=True)]))
        series.append(("http_requests_per_second", labels,
                       [(t, round(40 * w, 3)) for t, w in zip(times, wave, strict=True)]))
    series.append(("queue_messages_ready", {"namespace": "shop", "queue": "orders"},
                   [(t, round(100 * w * w, 1)) for t, w in zip(times, wave, strict=True)]))
    series.append(("kube_deployment_status_replicas", {"namespace": "shop", "deployment": "web"},
                   [(t, float(pods)) for t in times]))
    return openmetrics(series)


def child(argv: list[str]) -> int:
    """Run and time one backtest in this (fresh) process; print the figures as JSON."""
    from controller.backtest.options import parse_options
    from controller.backtest.report import render_text
    from controller.backtest.report_data import render_json
    from controller.backtest.report_html import render_html
    from controller.backtest.run import fetch_inputs, replay

    opts = parse_options(argv, now=time.time())
    start, cpu0 = time.perf_counter(), time.process_time()
    inputs = asyncio.run(fetch_inputs(opts))
    fetched, cpu1 = time.perf_counter(), time.process_time()
    report = replay(opts, inputs)
    decided, cpu2 = time.perf_counter(), time.process_time()
    sizes = [len(render_text(report)), len(render_json(report)), len(render_html(report))]
    rendered, cpu3 = time.perf_counter(), time.process_time()
    print(json.dumps({"fetch_s": fetched - start, "decide_s": decided - fetched, "render_s": rendered - decided,
                      "total_s": rendered - start, "cpu": [cpu1 - cpu0, cpu2 - cpu1, cpu3 - cpu2, cpu3 - cpu0],
                      "load": os.getloadavg()[0], "syncs": inputs.grid.count, "bytes": sizes,
                      "changes": len(report.runs[0].timeline.changes),
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m hack.bench.backtest")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--pods", type=int, default=4)
    parser.add_argument("--prediction", action="store_true", help="the spec predicts (mode Active, horizon 180s)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-backtest-") as tmp:
        work = Path(tmp)
        (work / "rules.yaml").write_text(RULES)
        (work / "spec.yaml").write_text(SPEC + (PREDICTION if args.prediction else ""))
        setup = time.perf_counter()
        with BackfilledPrometheus(history(args.days, args.pods)) as prometheus:
            print(f"setup (generate + promtool backfill + start): {time.perf_counter() - setup:.1f}s", flush=True)
            end = T0 + args.days * 86400
            cmd = [sys.executable, "-m", "hack.bench.backtest", "--child", "-f", str(work / "spec.yaml"),
                   "--prometheus-url", prometheus.url, "--rules", str(work / "rules.yaml"),
                   "--from", str(T0), "--to", str(end), "--step", f"{STEP}s", "--pod-requests", "cpu=500m",
                   "--actual-replicas-query", 'sum(kube_deployment_status_replicas{namespace="shop",deployment="web"})']
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{figures['syncs']:,} syncs x 3 metrics over {args.days} days at {STEP}s, {args.pods} pods reporting, "
          f"{figures['changes']} scale changes")
    cpu = figures["cpu"]
    print(f"wall seconds (CPU seconds of the backtest process); load average {figures['load']:.1f} at the end")
    print(f"fetch  {figures['fetch_s']:6.2f} s ({cpu[0]:.2f})")
    print(f"decide {figures['decide_s']:6.2f} s ({cpu[1]:.2f})   bar <= {BAR_DECIDE_S:g} s; "
          f"{figures['syncs'] / figures['decide_s']:,.0f} syncs/s")
    print(f"render {figures['render_s']:6.2f} s ({cpu[2]:.2f})   text, JSON, HTML: "
          f"{', '.join(f'{b:,}' for b in figures['bytes'])} bytes")
    print(f"total  {figures['total_s']:6.2f} s ({cpu[3]:.2f})   bar <= {BAR_TOTAL_S:g} s")
    print(f"peak RSS {figures['peak_rss_mib']:.0f} MiB")
    if args.prediction:
        print("prediction on (Active, horizon 180s): the decide bar is issue 11's reactive one; the total bar holds")
        missed = figures["total_s"] > BAR_TOTAL_S
    else:
        missed = figures["decide_s"] > BAR_DECIDE_S or figures["total_s"] > BAR_TOTAL_S
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
