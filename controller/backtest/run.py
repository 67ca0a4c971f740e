"""One backtest, end to end: files -> queries -> history -> replay -> `Report`.

Reads the spec(s) and the rule file, asks Prometheus which series each needed `seriesQuery`
matches in the range, resolves every metric to the adapter's PromQL, fetches each distinct query
(and the actual replicas query) once for all specs, then replays each spec on the same history.

Non-goals: flag parsing (`options`), output formats (`report*`). I/O: files and Prometheus.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

from controller.algorithm import ControllerConfig
from controller.algorithm.spec import SourceType, TargetType
from controller.backtest.model import Accumulator, Gap, Grid, LoadModel, MetricHistory, assumption_for, gaps
from controller.backtest.options import Options, suggest_step, sync_count
from controller.backtest.report import MetricInfo, Report, SpecRun, fmt_seconds
from controller.backtest.simulate import simulate
from controller.backtest.spec_file import BacktestSpec, SpecError, spec_from_manifest
from controller.backtest.summary import pods_per_node, summarize
from controller.history import prometheus as hist
from controller.history.rules import CompiledConfig, load_rules
from controller.history.resolve import MetricQuery, QueryKind, default_pod_regex, resolve_all, series_queries

__all__ = ["BacktestError", "Inputs", "fetch_inputs", "replay", "run_backtest"]


class BacktestError(ValueError):
    """The backtest cannot run as asked; the message says why and what to change."""


def load_spec(path: str) -> BacktestSpec:
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as err:
        raise SpecError(f"{path}: {err}") from None
    return spec_from_manifest(doc, source=path)


def make_grid(opts: Options, specs: Sequence[BacktestSpec]) -> Grid:
    """Ticks at --step, else at the greatest common divisor of the specs' sync periods (each syncs
    every sync_period / step ticks)."""
    step = opts.step or float(math.gcd(*(max(1, round(s.sync_period)) for s in specs)))
    count = sync_count(opts.start, opts.end, step)
    if count > opts.max_syncs:
        why = ("--step" if opts.step else "the spec's syncPeriodSeconds" if len({s.sync_period for s in specs}) == 1
               else "the greatest common divisor of the specs' sync periods")
        raise BacktestError(
            f"the range is {count:,} steps of {fmt_seconds(step)} ({why}), over the limit of {opts.max_syncs:,}: "
            f"use --step {suggest_step(opts.start, opts.end, opts.max_syncs)} (every spec then syncs at it) or a "
            "shorter range (or raise --max-syncs)")
    return Grid(start=opts.start, step=step, count=count, stop=opts.end)


def _check_requests(spec: BacktestSpec, opts: Options) -> None:
    for k, m in enumerate(spec.autoscaler.metrics):
        t = m.target
        utilization = t is not None and (t.type is TargetType.UTILIZATION or t.average_utilization is not None)
        resource = m.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE)
        if resource and utilization and m.name not in opts.pod_requests:
            raise BacktestError(
                f"metric [{k}] {m.type} {m.name} has a Utilization target: give the pods' requests with "
                f"--pod-requests {m.name}=… (the backtest has no cluster to read them from)")


def _key(q: MetricQuery) -> tuple[str, ...]:
    return (q.promql, q.kind, q.object_label, q.object_name, q.container_label, q.spec.container)


def _label(q: MetricQuery) -> str:
    t = q.spec.target
    kind = "" if t is None or t.type is None else f" ({t.type})"
    return f"{q.spec.type} {q.spec.name}{kind}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Fetched:
    histories: dict[tuple[str, ...], MetricHistory]
    actual: MetricHistory | None
    gaps: tuple[Gap, ...]
    warnings: tuple[str, ...] = ()


async def _fetch(opts: Options, grid: Grid, queries: Sequence[MetricQuery], pod_pattern: re.Pattern[str],
                 prometheus: hist.PrometheusHistory) -> _Fetched:
    accs: dict[tuple[str, ...], tuple[str, Accumulator]] = {}
    for q in queries:
        accs.setdefault(_key(q), (_label(q), Accumulator.for_query(q, grid, pod_pattern)))
    jobs = [hist.Job(what=f"{label}: {key[0]}", promql=key[0], consume=acc.add) for key, (label, acc) in accs.items()]
    actual_acc = None
    if opts.actual_replicas_query:
        actual_acc = Accumulator(grid=grid, kind=QueryKind.EXTERNAL, one_series=True)
        jobs.append(hist.Job(what=f"--actual-replicas-query {opts.actual_replicas_query}",
                             promql=opts.actual_replicas_query, consume=actual_acc.add))
    await prometheus.fetch(jobs, grid, chunk_points=opts.chunk_points)
    histories = {key: acc.history() for key, (_label_, acc) in accs.items()}
    found = [g for key, (label, _acc) in accs.items() for g in gaps(label, histories[key].present, grid)]
    actual = actual_acc.history() if actual_acc is not None else None
    if actual is not None:
        found += gaps("actual replicas", actual.present, grid)
    elif opts.actual_replicas is not None:
        actual = MetricHistory(total=array("d", [opts.actual_replicas * 1000.0]) * grid.count,
                               present=b"\x01" * grid.count, pods=array("H", bytes(2 * grid.count)))
    return _Fetched(histories=histories, actual=actual, gaps=tuple(found), warnings=prometheus.warnings)


def _actual_source(opts: Options) -> str:
    if opts.actual_replicas_query:
        return f"--actual-replicas-query {opts.actual_replicas_query} (ticks without a sample: the pods reporting)"
    if opts.actual_replicas is not None:
        return f"--actual-replicas {opts.actual_replicas}"
    return ("the pods reporting each per-pod metric at each tick "
            "(give --actual-replicas-query to use kube-state-metrics)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Inputs:
    """Everything a replay needs, read from files and Prometheus."""

    grid: Grid
    specs: tuple[BacktestSpec, ...]
    resolved: tuple[tuple[MetricQuery, ...], ...]
    fetched: _Fetched
    namespace: str
    pod_regex: str


async def fetch_inputs(opts: Options, *, progress: Callable[[int, int], None] | None = None) -> Inputs:
    """Read the spec(s) and rules, resolve every metric, fetch the history (the I/O phase)."""
    specs = [load_spec(opts.spec_file)] + ([load_spec(opts.compare_file)] if opts.compare_file else [])
    compiled: CompiledConfig = load_rules(opts.rules_file)
    main = specs[0]
    grid = make_grid(opts, specs)
    for s in specs:
        _check_requests(s, opts)
    namespace = opts.namespace or main.namespace
    specs = [BacktestSpec(name=s.name, namespace=namespace, target_kind=s.target_kind, target_name=s.target_name,
                          sync_period=opts.step or float(round(s.sync_period)), autoscaler=s.autoscaler,
                          metric_selectors=s.metric_selectors,
                          paused=s.paused)
             for s in specs]
    pod_regex = opts.pod_regex or default_pod_regex(main.target_kind, main.target_name)
    try:
        pod_pattern = re.compile(pod_regex)
    except re.error as err:
        raise BacktestError(f"--pod-regex {pod_regex!r}: {err}") from None
    async with hist.PrometheusHistory(opts.prometheus_url, parallel=opts.parallel, headers=opts.headers,
                                      progress=progress) as prometheus:
        needed = tuple(dict.fromkeys(q for s in specs for q in series_queries(compiled, s.autoscaler.metrics)))
        shapes = await prometheus.series_shapes(needed, grid.start, grid.end)
        resolved = tuple(resolve_all(compiled, shapes, namespace=s.namespace, metrics=s.autoscaler.metrics,
                                     metric_selectors=s.metric_selectors, rules_path=opts.rules_file)
                         for s in specs)
        fetched = await _fetch(opts, grid, [q for qs in resolved for q in qs], pod_pattern, prometheus)
    return Inputs(grid=grid, specs=tuple(specs), resolved=resolved, fetched=fetched, namespace=namespace,
                  pod_regex=pod_regex)


async def run_backtest(opts: Options, *, progress: Callable[[int, int], None] | None = None) -> Report:
    return replay(opts, await fetch_inputs(opts, progress=progress))


def replay(opts: Options, inputs: Inputs) -> Report:
    """Replay every spec on the fetched history and summarise (the decide phase; no I/O)."""
    return _replay(opts, inputs.grid, inputs.specs, inputs.resolved, inputs.fetched, namespace=inputs.namespace,
                   pod_regex=inputs.pod_regex)


def _replay(opts: Options, grid: Grid, specs: Sequence[BacktestSpec], resolved: Sequence[Sequence[MetricQuery]],
            fetched: _Fetched, *, namespace: str, pod_regex: str) -> Report:
    config = ControllerConfig(tolerance=opts.tolerance, downscale_stabilization=opts.downscale_stabilization)
    per_node = pods_per_node(opts.node_allocatable, opts.pod_requests) if opts.node_allocatable else None
    explain = None if opts.explain_at is None else min(max(grid.index(opts.explain_at), 0), grid.count - 1)
    source = _actual_source(opts)
    window = 0.0  # per-pod samples are read at the tick itself
    runs: list[SpecRun] = []
    model = None
    for spec, queries in zip(specs, resolved, strict=True):
        model = LoadModel(grid=grid, queries=queries, histories=[fetched.histories[_key(q)] for q in queries],
                          actual=fetched.actual, window=window)
        first = model.first_actual()  # 0 is a count (autoscaling disabled), not "unknown"
        initial = spec.autoscaler.min_replicas if first is None else first
        timeline = simulate(spec.name, spec.autoscaler, model, grid, config=config, requests=opts.pod_requests,
                            initial_replicas=initial, explain_at=explain,
                            sync_every=max(1, round(spec.sync_period / grid.step)), namespace=namespace)
        metrics = tuple(MetricInfo(label=_label(q), unit="%" if timeline.targets and _is_util(q) else "m",
                                   promql=q.promql, rule=q.rule, assumption=assumption_for(q))
                        for q in queries)
        runs.append(SpecRun(source=(opts.compare_file or "") if runs else opts.spec_file, timeline=timeline,
                            summary=summarize(timeline, model, flap_window=opts.flap_window, per_node=per_node),
                            metrics=metrics))
    assert model is not None
    actual = tuple(model.actual_replicas(i) for i in range(grid.count)) if fetched.actual is not None else ()
    inputs = {"spec": opts.spec_file, "compare": opts.compare_file or "", "rules": opts.rules_file,
              "prometheus": opts.prometheus_url, "namespace": namespace, "pods": f"names matching {pod_regex}",
              "step": fmt_seconds(grid.step),
              "sync periods": ", ".join(f"{s.name}: {fmt_seconds(s.sync_period)}" for s in specs)
              + ("" if opts.step is None else " (--step)"), "tolerance": f"{opts.tolerance:g}",
              "downscale stabilization (legacy path)": fmt_seconds(opts.downscale_stabilization),
              "pod requests": _res(opts.pod_requests), "node allocatable": _res(opts.node_allocatable),
              "initial replicas": "the actual replicas at the first tick, else minReplicas",
              "simulated pods": "ready at once, past CPU initialization; load spread evenly; as many as the "
                                "target's pods that reported nothing (actual - reporting) stay without metrics",
              "scaled to/from 0 outside the autoscaler": "followed from the actual replicas when minReplicas > 0"}
    if any(s.paused for s in specs):
        inputs["spec.paused"] = "ignored: the replay shows what the spec would do unpaused"
    return Report(inputs=inputs, runs=tuple(runs), gaps=fetched.gaps, warnings=fetched.warnings, actual=actual,
                  actual_source=source, per_node=per_node, flap_window=opts.flap_window)


def _is_util(q: MetricQuery) -> bool:
    t = q.spec.target
    return t is not None and (t.type is TargetType.UTILIZATION
                              or (t.type is None and t.average_utilization is not None))


def _res(values: Mapping[str, int]) -> str:
    if not values:
        return "-"
    return ",".join(f"{k}={v}m" for k, v in sorted(values.items()))
