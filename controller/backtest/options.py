"""The `backtest` command line: flags -> `Options`, with errors a person can act on.

Times are RFC 3339 with their offset (`2026-11-18T00:00:00Z`, `…+01:00`; a time without one is
refused rather than guessed), finite unix seconds, `now` or `now-7d`; durations are
Prometheus durations (`15s`, `5m`, `1h30m`); resources are `cpu=500m,memory=1Gi`. `now` is a
parameter: the caller reads the clock once.

Non-goals: reading files, running anything. Pure: no I/O, no clock.
"""

from __future__ import annotations

import argparse
import math
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from controller.history.rules import parse_duration
from kubecommon import kubetime
from kubecommon.quantity import Quantity, QuantityError

__all__ = ["DEFAULT_MAX_SYNCS", "Options", "OptionsError", "parse_options", "sync_count"]

DEFAULT_MAX_SYNCS = 500_000
MAX_SYNCS_LIMIT = 10 * DEFAULT_MAX_SYNCS  # beyond this the arrays and the replay take too long to be useful
MAX_PARALLEL = 32  # range queries in flight against one Prometheus
MAX_POINTS = 11_000  # Prometheus' limit of points per series in one range query
MAX_POD_STARTUP = 3600.0  # a pod not ready within an hour is a broken rollout, not start-up to model
_NICE_STEPS = (15, 30, 60, 120, 300, 600, 900, 1800, 3600)
_TIME_FORMS = "use RFC 3339 with an offset (2026-11-18T00:00:00Z), unix seconds, now or now-7d"
_NO_OFFSET = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}([.,]\d+)?)?)?", re.ASCII)


class OptionsError(ValueError):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    spec_file: str
    compare_file: str | None
    prometheus_url: str
    rules_file: str
    start: float
    end: float
    step: float | None  # None: the spec's syncPeriodSeconds
    explain_at: float | None
    node_allocatable: Mapping[str, int] = field(default_factory=dict)  # milli-units
    pod_requests: Mapping[str, int] = field(default_factory=dict)  # milli-units
    actual_replicas: int | None = None
    actual_replicas_query: str | None = None
    output: str = "text"
    html_file: str | None = None
    namespace: str | None = None
    pod_regex: str | None = None
    flap_window: float = 600.0
    max_syncs: int = DEFAULT_MAX_SYNCS
    parallel: int = 4
    chunk_points: int = 5_000
    tolerance: float = 0.1
    downscale_stabilization: float = 300.0
    headers: Mapping[str, str] = field(default_factory=dict)
    pod_startup: float = 0.0  # seconds from a pod's creation until it is ready and serves load


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="prom-autoscaler-controller backtest",
        description="Replay an autoscaler spec against Prometheus history with the controller's decision code.")
    a = p.add_argument
    a("-f", "--filename", required=True, help="PromAutoscaler or autoscaling/v2 HPA manifest")
    a("--prometheus-url", required=True)
    a("--rules", required=True, help="the adapter's rule file: metrics resolve to the PromQL the adapter runs")
    a("--from", dest="start", required=True, help="RFC 3339 with offset (…Z, …+01:00), unix seconds, now or now-7d")
    a("--to", dest="end", required=True)
    a("--step", help="simulated sync period (default: the spec's syncPeriodSeconds, else 15s)")
    a("--compare", help="a second spec replayed on the same history, side by side")
    a("--explain-at", help="print the decision trace of the sync at this time")
    a("--node-allocatable", default="", help="cpu=…,memory=… of one node: report nodes needed")
    a("--pod-requests", default="", help="cpu=…,memory=… of one pod (Utilization targets and nodes)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--actual-replicas", type=int, help="the replicas that actually ran (constant)")
    g.add_argument("--actual-replicas-query", help="PromQL giving one series: the replicas the target had (what "
                   "the HPA reads from /scale), e.g. max(kube_deployment_spec_replicas{namespace=\"shop\","
                   "deployment=\"web\"})")
    a("-o", "--output", choices=("text", "json", "csv"), default="text")
    a("--html", help="also write the self-contained HTML report to this file")
    a("--namespace", help="namespace of the target's pods (default: the spec's)")
    a("--pod-regex", help="pod names of the target (default: the scale target's name, then one or two -segments, "
                          "e.g. web-7d9f8c-x2k4q; a StatefulSet's name-<ordinal>)")
    a("--flap-window", default="10m", help="a reversal within this long counts as a flap (default 10m)")
    a("--max-syncs", type=int, default=DEFAULT_MAX_SYNCS, help="refuse ranges with more syncs than this")
    a("--parallel", type=int, default=4, help=f"range queries in flight (default 4, at most {MAX_PARALLEL})")
    a("--chunk-points", type=int, default=5_000, help="ticks per range query (default 5000, at most 11000)")
    a("--tolerance", type=float, default=0.1, help="--horizontal-pod-autoscaler-tolerance (default 0.1)")
    a("--downscale-stabilization", default="5m", help="the controller's downscale window (default 5m)")
    a("--pod-startup", default="0s", metavar="DURATION",
      help="a pod added at t serves load (and is Ready) from t + DURATION; per-pod values divide the load by "
           "the ready pods (default 0s: ready at once)")
    a("--prometheus-header", action="append", default=[], metavar="KEY=VALUE")
    return p


def parse_time(text: str, *, now: float, flag: str = "time") -> float:
    """Epoch seconds of an RFC 3339 time with its offset, unix seconds, `now` or `now-<duration>`."""
    t = text.strip()
    if t == "now":
        return now
    if t.startswith("now-"):
        try:
            return now - parse_duration(t[4:])
        except ValueError as err:
            raise OptionsError(f"{flag} {text!r}: {err}") from None
    try:
        seconds = float(t)
    except ValueError:
        return _rfc3339(t, text, flag)
    if not math.isfinite(seconds):
        raise OptionsError(f"{flag} {text!r} is not a finite time: {_TIME_FORMS}")
    return seconds


def _rfc3339(t: str, text: str, flag: str) -> float:
    """RFC 3339 as Prometheus reads it; lower-case t/z and a space for T (RFC 3339 5.6) too."""
    if len(t) > 10 and t[10] in " t":
        t = f"{t[:10]}T{t[11:]}"
    t = t[:-1] + "Z" if t.endswith("z") else t
    try:
        seconds = kubetime.parse_time(t)
    except kubetime.TimeError:
        if _NO_OFFSET.fullmatch(t):
            raise OptionsError(f"{flag} {text!r} has no UTC offset, so it could be UTC or any local time: add Z "
                               "for UTC (2026-11-18T09:00:00Z) or its offset (2026-11-18T09:00:00+01:00)") from None
        raise OptionsError(f"{flag} {text!r}: {_TIME_FORMS}") from None
    return seconds


def _duration(text: str, flag: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise OptionsError(f"{flag}: {err}") from None


def parse_resources(text: str, flag: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in ("cpu", "memory"):
            raise OptionsError(f"{flag}: expected cpu=…,memory=… (e.g. cpu=500m,memory=1Gi), got {part!r}")
        try:
            out[key] = Quantity.parse(value).milli_value()
        except QuantityError as err:
            raise OptionsError(f"{flag}: {err}") from None
        if out[key] <= 0:
            raise OptionsError(f"{flag}: {key} must be positive")
    return out


def sync_count(start: float, end: float, step: float) -> int:
    return int(math.floor((end - start) / step + 1e-9)) + 1


def suggest_step(start: float, end: float, max_syncs: int) -> str:
    needed = (end - start) / max(max_syncs - 1, 1)
    best = next((s for s in _NICE_STEPS if s >= needed), math.ceil(needed))
    return f"{best}s" if best < 60 else f"{best // 60}m" if best < 3600 else f"{best // 3600}h"


def _prometheus_url(text: str) -> str:
    """An http(s) URL with a host (a path prefix is kept: Thanos or a gateway may serve the API under one)."""
    try:
        url = urllib.parse.urlsplit(text.strip())
        host = url.hostname
        url.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError as err:
        raise OptionsError(f"--prometheus-url {text!r}: {err}") from None
    if url.scheme not in ("http", "https") or not host:
        raise OptionsError(f"--prometheus-url {text!r}: expected http://host:port or https://host:port "
                           "(with any path prefix Prometheus is served under)")
    return text.strip()


def _check_limits(ns: argparse.Namespace) -> None:
    """The flags that bound the work: every one in a range the backtest and Prometheus can hold."""
    if not 1 <= ns.max_syncs <= MAX_SYNCS_LIMIT:
        raise OptionsError(f"--max-syncs must be between 1 and {MAX_SYNCS_LIMIT:,} (a longer range needs a longer "
                           f"--step), got {ns.max_syncs:,}")
    if not 1 <= ns.parallel <= MAX_PARALLEL:
        raise OptionsError(f"--parallel must be between 1 and {MAX_PARALLEL} range queries in flight, "
                           f"got {ns.parallel}")
    if not 1 <= ns.chunk_points <= MAX_POINTS:
        raise OptionsError(f"--chunk-points must be between 1 and {MAX_POINTS:,} (Prometheus refuses more points per "
                           f"series in one range query), got {ns.chunk_points:,}")
    if not 0 <= ns.tolerance < 1e6:  # False for NaN
        raise OptionsError(f"--tolerance must be a non-negative number (0.1 is 10 %), got {ns.tolerance}")


def parse_options(argv: Sequence[str], *, now: float) -> Options:
    """Options from argv; argparse exits on --help and on unknown flags, `OptionsError` otherwise."""
    ns = build_parser().parse_args(list(argv))
    start, end = parse_time(ns.start, now=now, flag="--from"), parse_time(ns.end, now=now, flag="--to")
    if end <= start:
        raise OptionsError(f"--to must be after --from ({ns.start} .. {ns.end})")
    step = None if ns.step is None else _duration(ns.step, "--step")
    if step is not None and step <= 0:
        raise OptionsError("--step must be positive")
    headers = {}
    for item in ns.prometheus_header:
        key, sep, value = item.partition("=")
        if not sep:
            raise OptionsError(f"--prometheus-header: expected KEY=VALUE, got {item!r}")
        headers[key] = value
    explain_at = None if ns.explain_at is None else parse_time(ns.explain_at, now=now, flag="--explain-at")
    if explain_at is not None and not start <= explain_at <= end:
        raise OptionsError(f"--explain-at {ns.explain_at} is outside --from .. --to")
    _check_limits(ns)
    if ns.actual_replicas is not None and ns.actual_replicas < 0:
        raise OptionsError("--actual-replicas must not be negative")
    pod_startup = _duration(ns.pod_startup, "--pod-startup")
    if not 0 <= pod_startup <= MAX_POD_STARTUP:
        raise OptionsError(f"--pod-startup must be between 0s and 1h, got {ns.pod_startup}")
    return Options(
        spec_file=ns.filename, compare_file=ns.compare, prometheus_url=_prometheus_url(ns.prometheus_url),
        rules_file=ns.rules,
        start=start, end=end, step=step,
        explain_at=explain_at,
        node_allocatable=parse_resources(ns.node_allocatable, "--node-allocatable"),
        pod_requests=parse_resources(ns.pod_requests, "--pod-requests"),
        actual_replicas=ns.actual_replicas, actual_replicas_query=ns.actual_replicas_query,
        output=ns.output, html_file=ns.html, namespace=ns.namespace, pod_regex=ns.pod_regex,
        flap_window=_duration(ns.flap_window, "--flap-window"), max_syncs=ns.max_syncs,
        parallel=ns.parallel, chunk_points=ns.chunk_points, tolerance=ns.tolerance,
        downscale_stabilization=_duration(ns.downscale_stabilization, "--downscale-stabilization"),
        headers=headers, pod_startup=pod_startup,
    )
