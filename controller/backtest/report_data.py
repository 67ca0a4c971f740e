"""The backtest report for scripts: `-o json` (everything, per tick) and `-o csv` (one row per
spec and tick).

JSON: `inputs`, `model` (per spec and metric: query, rule, assumption), `gaps`, Prometheus'
`warnings`, and per spec the `summary` (with `differences`, the runs of steps at another count
than recorded), the scale `changes` (`external`: made outside the autoscaler, followed) and
`steps` (time, replicas, actual replicas, per-metric value as the algorithm compared it to the
target, the stage that limited the count, the error, the ready replicas and the replicas needed at
target + tolerance; for a predictive spec each metric's forecast and whether it raised the count).
Runs are in the order given: `-f`, then `--compare`. NaN and unknown values are null. CSV
columns: time, spec, replicas, actual_replicas, limited_by, error, then `metric<k>_value`,
`metric<k>_target` for every metric index.

Non-goals: text and HTML. Pure: returns strings.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import orjson

from controller.backtest.report import Report, SpecRun, fmt_time

__all__ = ["render_csv", "render_json"]


def _v(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def _run(run: SpecRun, report: Report) -> dict[str, Any]:
    t = run.timeline
    actual = report.actual
    return {
        "name": run.name,
        "source": run.source,
        "summary": run.summary.to_dict(),
        "metrics": [{"label": m.label, "unit": m.unit, "query": m.promql, "rule": m.rule,
                     "assumption": m.assumption, "target": _v(target)}
                    for m, target in zip(run.metrics, t.targets, strict=True)],
        "changes": [{"time": fmt_time(c.time), "from": c.before, "to": c.after, "reason": c.reason,
                     "external": c.external}
                    for c in t.changes],
        "steps": [{"time": fmt_time(t.grid.time(i)), "replicas": t.replicas[i],
                   "actualReplicas": actual[i] if actual else None,
                   "values": [_v(values[i]) for values in t.values],
                   "limitedBy": t.limited_by[i], "error": t.errors[i] or None,
                   **({"readyReplicas": t.ready[i], "neededReplicas": _v(t.needed[i])} if t.ready else {}),
                   **({"forecasts": [_v(f[i]) for f in t.forecasts], "predicted": bool(t.predicted[i])}
                      if t.forecasts else {})}
                  for i in range(t.grid.count)],
    }


def render_json(report: Report) -> str:
    grid = report.runs[0].timeline.grid
    body = {
        "inputs": dict(report.inputs),
        "range": {"from": fmt_time(grid.start), "to": fmt_time(grid.end), "stepSeconds": grid.step,
                  "syncs": grid.count},
        "actualReplicasSource": report.actual_source,
        "gaps": [{"what": g.what, "from": fmt_time(g.start), "to": fmt_time(g.end), "syncs": g.ticks}
                 for g in report.gaps],
        "warnings": list(report.warnings),
        "runs": [_run(r, report) for r in report.runs],
    }
    return orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n"


def render_csv(report: Report) -> str:
    metrics = max(len(r.metrics) for r in report.runs)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["time", "spec", "replicas", "actual_replicas", "limited_by", "error"]
    for k in range(metrics):
        header += [f"metric{k}_value", f"metric{k}_target"]
    writer.writerow(header)
    for run in report.runs:
        t = run.timeline
        for i in range(t.grid.count):
            actual = report.actual[i] if report.actual else None
            row: list[object] = [fmt_time(t.grid.time(i)), run.name, t.replicas[i],
                                 "" if actual is None else f"{actual:g}", t.limited_by[i], t.errors[i]]
            for k in range(metrics):
                if k < len(t.values):
                    value, target = t.values[k][i], t.targets[k]
                    row += ["" if math.isnan(value) else f"{value:g}", "" if math.isnan(target) else f"{target:g}"]
                else:
                    row += ["", ""]
            writer.writerow(row)
    return out.getvalue()
