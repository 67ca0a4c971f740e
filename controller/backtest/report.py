"""What a backtest reports, and the short text summary for the terminal.

`Report` gathers the inputs (so a run can be reproduced), per spec the timeline and summary,
per metric the query, rule and load-model assumption, the gaps found in the history and the
actual replicas when known. `render_text` prints the summary table (specs side by side when
comparing), the model, the gaps, the syncs that decided another count than the target recorded,
and any `--explain-at` trace.

Non-goals: computing any of it; JSON/CSV (`report_data`) and HTML (`report_html`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.backtest.model import Gap
from controller.backtest.model import iso_time as fmt_time
from controller.backtest.simulate import Timeline
from controller.backtest.summary import Summary

__all__ = ["MetricInfo", "Report", "SpecRun", "difference_lines", "fmt_time", "render_text", "warning_lines"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricInfo:
    label: str  # e.g. "Resource cpu (Utilization)"
    unit: str  # "%" or "m" (milli-units)
    promql: str
    rule: str
    assumption: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecRun:
    source: str  # the spec file
    timeline: Timeline
    summary: Summary
    metrics: tuple[MetricInfo, ...]

    @property
    def name(self) -> str:
        return self.timeline.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    inputs: Mapping[str, str]
    runs: tuple[SpecRun, ...]
    gaps: tuple[Gap, ...]
    actual: tuple[float | None, ...]  # per tick; empty when unknown
    actual_source: str
    per_node: int | None
    flap_window: float
    warnings: tuple[str, ...] = ()  # Prometheus' warnings, `query: warning`


def fmt_seconds(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec else "")


def _num(value: float | int | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def summary_rows(report: Report) -> list[tuple[str, list[str]]]:
    """(row label, one cell per spec) — shared by the text and HTML tables."""
    s = [r.summary for r in report.runs]
    window = fmt_seconds(report.flap_window)
    rows = [
        ("replica-hours", [_num(x.replica_hours) for x in s]),
        ("actual replica-hours", [_num(x.actual_replica_hours) for x in s]),
        ("scale events up / down", [f"{x.scale_ups} / {x.scale_downs}" for x in s]),
        (f"flaps (reversal within {window})", [str(x.flaps) for x in s]),
        ("largest single change", [str(x.largest_change) for x in s]),
        ("replicas min / max seen", [f"{x.min_replicas_seen} / {x.max_replicas_seen}" for x in s]),
        ("time above target", [fmt_seconds(x.seconds_above_target) for x in s]),
        ("time above target + tolerance", [fmt_seconds(x.seconds_above_tolerance) for x in s]),
        ("deficit replica-hours (needed - ready)", [_num(x.deficit_replica_hours, 2) for x in s]),
        ("time below target (all metrics)", [fmt_seconds(x.seconds_below_target) for x in s]),
        ("peak value / target", [_num(x.peak_ratio, 2) for x in s]),
        ("time at maxReplicas", [fmt_seconds(x.seconds_at_max) for x in s]),
        ("time at minReplicas", [fmt_seconds(x.seconds_at_min) for x in s]),
        ("syncs held: metrics missing or failed", [str(x.blocked_ticks) for x in s]),
    ]
    if any(r.timeline.spec.min_replicas == 0 for r in report.runs):  # scale to zero
        rows.append(("time at 0 replicas", [fmt_seconds(x.seconds_at_zero) for x in s]))
        if len(s) == 2:  # --compare: against the other spec (e.g. the same one with minReplicas 1)
            rows.append(("replica-hours saved against the other spec",
                         [_num(other.replica_hours - x.replica_hours) for x, other in zip(s, s[::-1], strict=True)]))
    if any(r.timeline.horizon for r in report.runs):
        rows.append(("syncs raised by the forecast", [str(sum(r.timeline.predicted)) if r.timeline.horizon else "-"
                                                      for r in report.runs]))
    if report.actual:
        rows += [("steps at another count than recorded", [_num(x.steps_differing) for x in s]),
                 ("time above / below recorded", [f"{_dur(x.seconds_above_actual)} / {_dur(x.seconds_below_actual)}"
                                                  for x in s])]
    if report.per_node:
        rows += [("peak nodes", [_num(x.peak_nodes) for x in s]),
                 ("node-hours", [_num(x.node_hours) for x in s])]
    return rows


def _dur(seconds: float | None) -> str:
    return "-" if seconds is None else fmt_seconds(seconds)


def difference_lines(report: Report, limit: int = 20) -> list[str]:
    """Each spec's runs of syncs that decided another count than the target recorded."""
    if not report.actual:
        return []
    lines = []
    for run in report.runs:
        found = run.summary.differences
        if not found:
            lines.append(f"{run.name}: every sync decided the recorded replicas")
            continue
        lines.append(f"{run.name}: {len(found)} run(s) of steps at another count than the recorded replicas:")
        for d in found[:limit]:
            lo, hi = d.replicas
            alo, ahi = d.actual
            lines.append(f"  {fmt_time(d.start)} .. {fmt_time(d.end)} ({d.steps} steps): replay "
                         f"{lo if lo == hi else f'{lo}-{hi}'}, recorded {alo:g}" + ("" if alo == ahi else f"-{ahi:g}"))
        if len(found) > limit:
            lines.append(f"  ... and {len(found) - limit} more (see -o json)")
    return lines


def render_text(report: Report) -> str:
    grid = report.runs[0].timeline.grid
    lines = [f"backtest {fmt_time(grid.start)} .. {fmt_time(grid.end)}, step {fmt_seconds(grid.step)}, "
             f"{grid.count} syncs per spec"]
    names = [r.name for r in report.runs]
    width = max(len(label) for label, _ in summary_rows(report)) + 2
    cols = [max(len(n), 10) + 2 for n in names]
    lines.append(" " * width + "".join(n.rjust(c) for n, c in zip(names, cols, strict=True)))
    for label, cells in summary_rows(report):
        lines.append(label.ljust(width) + "".join(v.rjust(c) for v, c in zip(cells, cols, strict=True)))
    lines.append("")
    lines += model_lines(report)
    lines += gap_lines(report.gaps, grid.step)
    lines += warning_lines(report.warnings)
    differing = difference_lines(report)
    if differing:
        lines += ["", "against the recorded replicas:", *differing]
    for run in report.runs:
        if run.timeline.explained:
            lines += ["", f"decision of {run.name} at the --explain-at tick:", run.timeline.explained]
    return "\n".join(lines) + "\n"


def model_lines(report: Report) -> list[str]:
    lines = [f"load model (actual replicas: {report.actual_source}):"]
    for run in report.runs:
        for k, m in enumerate(run.metrics):
            lines.append(f"  {run.name} [{k}] {m.label}: {m.assumption}")
    return lines


def warning_lines(warnings: Sequence[str]) -> list[str]:
    if not warnings:
        return []
    return [f"Prometheus warnings ({len(warnings)}; the history may be incomplete, e.g. a partial answer):",
            *(f"  {w}" for w in warnings[:20]), *([f"  ... and {len(warnings) - 20} more (see -o json)"]
                                                 if len(warnings) > 20 else [])]


def gap_lines(gaps: Sequence[Gap], step: float) -> list[str]:
    if not gaps:
        return ["history: no gaps"]
    lines = [f"history gaps ({len(gaps)}; those syncs saw the metric as failed, nothing was filled in: as the "
             "controller, they held the count, or only scaled up on the metrics that were read):"]
    for g in gaps[:20]:
        lines.append(f"  {g.what}: {fmt_time(g.start)} .. {fmt_time(g.end)} ({fmt_seconds(g.ticks * step)})")
    if len(gaps) > 20:
        lines.append(f"  ... and {len(gaps) - 20} more (see -o json)")
    return lines
