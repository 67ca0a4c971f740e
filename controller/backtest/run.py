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
from controller.backtest import warmup
from controller.backtest.model import Accumulator, Gap, Grid, LoadModel, MetricHistory, assumption_for, gaps, since
from controller.backtest.options import Options, suggest_step, sync_count
from controller.backtest.report import MetricInfo, Report, SpecRun, fmt_seconds
from controller.backtest.simulate import simulate
from controller.backtest.spec_file import BacktestSpec, SpecError, spec_from_manifest
from controller.backtest.summary import pods_per_node, summarize
from controller.forecast import History
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
                 prometheus: hist.PrometheusHistory, *, counted_from: int = 0) -> _Fetched:
    """Every query over `grid`; gaps are reported from tick `counted_from` on (the range, after the warm-up)."""
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
    counted = Grid(start=grid.time(counted_from), step=grid.step, count=grid.count - counted_from, stop=grid.stop)
    found = [g for key, (label, _acc) in accs.items()
             for g in gaps(label, histories[key].present[counted_from:], counted)]
    actual = actual_acc.history() if actual_acc is not None else None
    if actual is not None:
        found += gaps("actual replicas", actual.present[counted_from:], counted)
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

    grid: Grid  # [--from, --to]
    specs: tuple[BacktestSpec, ...]
    resolved: tuple[tuple[MetricQuery, ...], ...]
    fetched: _Fetched  # over the warm-up and the range
    namespace: str
    pod_regex: str
    warm: int = 0  # warm-up ticks before --from
    earlier: _Fetched | None = None  # the predictive specs' history before the warm-up
    earlier_grid: Grid | None = None


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
        warm = _warm_ticks(opts, specs, grid)
        full = warmup.extended(grid, warm)
        fetched = await _fetch(opts, full, [q for qs in resolved for q in qs], pod_pattern, prometheus,
                               counted_from=warm)
        earlier_grid = warmup.before(full, warmup.lookback_seconds([s.autoscaler for s in specs]))
        earlier = None
        if earlier_grid is not None:  # the forecasters' history: a separate read, chunked like the rest
            earlier = await _fetch(opts, earlier_grid, [q for s, qs in zip(specs, resolved, strict=True)
                                                        if s.autoscaler.predicts for q in qs],
                                   pod_pattern, prometheus, counted_from=earlier_grid.count)
    return Inputs(grid=grid, specs=tuple(specs), resolved=resolved, fetched=fetched, namespace=namespace,
                  pod_regex=pod_regex, warm=warm, earlier=earlier, earlier_grid=earlier_grid)


def _warm_ticks(opts: Options, specs: Sequence[BacktestSpec], grid: Grid) -> int:
    """Warm-up ticks: the longest window any spec looks back on (and the pod start-up), in whole sync
    periods of every spec, so each syncs at --from as it would without a warm-up."""
    seconds = max(warmup.warmup_seconds(s.autoscaler, downscale_stabilization=opts.downscale_stabilization,
                                        pod_startup=opts.pod_startup) for s in specs)
    period = math.lcm(*(max(1, round(s.sync_period / grid.step)) for s in specs))
    return math.ceil(seconds / grid.step / period - 1e-9) * period


async def run_backtest(opts: Options, *, progress: Callable[[int, int], None] | None = None) -> Report:
    return replay(opts, await fetch_inputs(opts, progress=progress))


def replay(opts: Options, inputs: Inputs) -> Report:
    """Replay every spec on the fetched history and summarise (the decide phase; no I/O)."""
    grid, specs, resolved, fetched = inputs.grid, inputs.specs, inputs.resolved, inputs.fetched
    namespace, pod_regex, warm = inputs.namespace, inputs.pod_regex, inputs.warm
    full = warmup.extended(grid, warm)
    config = ControllerConfig(tolerance=opts.tolerance, downscale_stabilization=opts.downscale_stabilization)
    per_node = pods_per_node(opts.node_allocatable, opts.pod_requests) if opts.node_allocatable else None
    explain = None if opts.explain_at is None else min(max(grid.index(opts.explain_at), 0), grid.count - 1)
    source = _actual_source(opts)
    window = 0.0  # per-pod samples are read at the tick itself
    runs: list[SpecRun] = []
    model = None
    for spec, queries in zip(specs, resolved, strict=True):
        histories = [fetched.histories[_key(q)] for q in queries]
        whole = LoadModel(grid=full, queries=queries, histories=histories, actual=fetched.actual, window=window)
        forecasters = _forecast_histories(inputs, spec, queries, whole, full, window)
        skip = _first_known(histories, fetched.actual, warm)  # the warm-up starts where the history does
        sync_every = max(1, round(spec.sync_period / grid.step))
        skip -= skip % sync_every
        lead = warm - skip
        replayed = LoadModel(grid=warmup.extended(grid, lead), queries=queries,
                             histories=[since(h, skip) for h in histories],
                             actual=None if fetched.actual is None else since(fetched.actual, skip), window=window)
        model = LoadModel(grid=grid, queries=queries, histories=[since(h, warm) for h in histories],
                          actual=None if fetched.actual is None else since(fetched.actual, warm), window=window)
        first = replayed.first_actual()  # 0 is a count (autoscaling disabled), not "unknown"
        initial = spec.autoscaler.min_replicas if first is None else first
        timeline = simulate(spec.name, spec.autoscaler, replayed, warmup.extended(grid, lead), config=config,
                            requests=opts.pod_requests, initial_replicas=initial,
                            explain_at=None if explain is None else explain + lead, sync_every=sync_every,
                            namespace=namespace, pod_startup=opts.pod_startup, counted_from=lead,
                            histories=forecasters)
        metrics = tuple(MetricInfo(label=_label(q), unit="%" if timeline.targets and _is_util(q) else "m",
                                   promql=q.promql, rule=q.rule, assumption=assumption_for(q))
                        for q in queries)
        runs.append(SpecRun(source=(opts.compare_file or "") if runs else opts.spec_file, timeline=timeline,
                            summary=summarize(timeline, model, flap_window=opts.flap_window, per_node=per_node),
                            metrics=metrics))
    assert model is not None
    actual = tuple(model.actual_replicas(i) for i in range(grid.count)) if fetched.actual is not None else ()
    shown = {"spec": opts.spec_file, "compare": opts.compare_file or "", "rules": opts.rules_file,
              "prometheus": opts.prometheus_url, "namespace": namespace, "pods": f"names matching {pod_regex}",
              "step": fmt_seconds(grid.step),
              "sync periods": ", ".join(f"{s.name}: {fmt_seconds(s.sync_period)}" for s in specs)
              + ("" if opts.step is None else " (--step)"), "tolerance": f"{opts.tolerance:g}",
              "downscale stabilization (legacy path)": fmt_seconds(opts.downscale_stabilization),
              "pod requests": _res(opts.pod_requests), "node allocatable": _res(opts.node_allocatable),
              "initial replicas": "the actual replicas at the warm-up's first tick, else minReplicas",
              "warm-up": f"{fmt_seconds(warm * grid.step)} replayed before --from (the longest behavior window or "
                         "pod start-up), counted in no figure",
              "simulated pods": ("ready at once, past CPU initialization" if not opts.pod_startup else
                                 f"Running, not Ready and serving nothing for {fmt_seconds(opts.pod_startup)} after "
                                 "they are added (--pod-startup)")
                                + "; load spread evenly over the ready pods; as many as the target's pods that "
                                  "reported nothing (actual - reporting) stay without metrics",
              "scaled to/from 0 outside the autoscaler": "followed from the actual replicas when minReplicas > 0"}
    if any(s.paused for s in specs):
        shown["spec.paused"] = "ignored: the replay shows what the spec would do unpaused"
    return Report(inputs=shown, runs=tuple(runs), gaps=fetched.gaps, warnings=fetched.warnings, actual=actual,
                  actual_source=source, per_node=per_node, flap_window=opts.flap_window)


def _first_known(histories: Sequence[MetricHistory], actual: MetricHistory | None, warm: int) -> int:
    """The first warm-up tick with a sample of any metric or of the actual replicas (`warm`: none)."""
    found = [i for h in (*histories, *([actual] if actual is not None else []))
             if 0 <= (i := h.present.find(1, 0, warm))]
    return min(found, default=warm)


def _forecast_histories(inputs: Inputs, spec: BacktestSpec, queries: Sequence[MetricQuery], replayed: LoadModel,
                        full: Grid, window: float) -> tuple[History, ...]:
    """A predictive spec's per-metric load for its forecaster: the history before the warm-up, then the
    warm-up and the range (the forecaster reads only what precedes each sync)."""
    if not spec.autoscaler.predicts:
        return ()
    earlier, earlier_grid = inputs.earlier, inputs.earlier_grid
    before = None
    if earlier is not None and earlier_grid is not None:
        before = LoadModel(grid=earlier_grid, queries=queries, histories=[earlier.histories[_key(q)] for q in queries],
                           actual=earlier.actual, window=window)
    return warmup.forecast_histories(replayed, full, before, earlier_grid, len(queries))


def _is_util(q: MetricQuery) -> bool:
    t = q.spec.target
    return t is not None and (t.type is TargetType.UTILIZATION
                              or (t.type is None and t.average_utilization is not None))


def _res(values: Mapping[str, int]) -> str:
    if not values:
        return "-"
    return ",".join(f"{k}={v}m" for k, v in sorted(values.items()))
