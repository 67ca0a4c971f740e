"""Flags of `prom-autoscaler-controller run`, named and defaulted like kube-controller-manager's.

| flag | default | upstream |
| --- | --- | --- |
| `--kubeconfig` | in-cluster, else `$KUBECONFIG` / `~/.kube/config` | same |
| `--concurrent-syncs` | 5 | `--concurrent-horizontal-pod-autoscaler-syncs` 5 |
| `--horizontal-pod-autoscaler-sync-period` (alias `--sync-period`) | 15s (objects without `syncPeriodSeconds`) | same |
| `--horizontal-pod-autoscaler-tolerance` | 0.1 | same |
| `--horizontal-pod-autoscaler-downscale-stabilization` | 5m0s | same |
| `--horizontal-pod-autoscaler-cpu-initialization-period` | 5m0s | same |
| `--horizontal-pod-autoscaler-initial-readiness-delay` | 30s | same |
| `--leader-elect` | true | same |
| `--leader-elect-lease-duration` / `-renew-deadline` / `-retry-period` | 15s / 10s / 2s | same |
| `--leader-elect-resource-name` | prom-autoscaler-controller | kube-controller-manager |
| `--leader-elect-resource-namespace` | `$POD_NAMESPACE`, else the service account's, else default | kube-system |
| `--preview-native-hpas` | false | (none: shadow-decides native HPAs, writes nothing) |
| `--metrics-bind-address` / `--metrics-port` | 0.0.0.0 / 8080 | `/metrics`, `/healthz`, `/readyz` |
| `--metrics-secure` | true: HTTPS, TokenReview + SubjectAccessReview | controller-runtime's secure metrics |
| `--tls-cert-file` / `--tls-private-key-file` | self-signed, generated into `--cert-dir` | same |
| `--cert-dir` | a new private directory under the temp dir | same (kube: `apiserver.local.config/certificates`) |
| `--authorization-always-allow-paths` | /healthz,/livez,/readyz | same |
| `--watch-namespace` | all namespaces | |
| `--status-checkpoint-interval` | 1m0s | (none: how often history may reach status between scale writes) |

Durations are Go durations (`1m30s`, `500ms`, `0`), read by `kubecommon.gotime` exactly as
kube-controller-manager reads them. A bad value is a usage error naming the flag (exit 2).

Non-goals: starting anything (`controller.app`), subcommands (`controller.__main__`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from controller.http_auth import DEFAULT_ALWAYS_ALLOW, AlwaysAllowPaths
from kubecommon import gotime

__all__ = ["RunOptions", "build_parser", "parse"]

_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
T = TypeVar("T")
_BOOL = {"true": True, "1": True, "t": True, "false": False, "0": False, "f": False}


def _duration(text: str) -> float:
    try:
        seconds = gotime.parse_duration(text)
    except gotime.DurationError as err:
        raise ValueError(f"{err} (use e.g. 30s, 5m0s, 1h)") from None
    if seconds < 0:
        raise ValueError(f"duration {text!r} must not be negative")
    return seconds


def _positive_duration(text: str) -> float:
    seconds = _duration(text)
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return seconds


def _bool(text: str) -> bool:
    try:
        return _BOOL[text.strip().lower()]
    except KeyError:
        raise ValueError(f"invalid boolean {text!r} (true or false)") from None


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"{text} must be at least 1")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"port {text} is outside 0-65535")
    return value


def _tolerance(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise ValueError(f"tolerance {text} must be in [0, 1)")
    return value


def _flag_type(parse_value: Callable[[str], T]) -> Callable[[str], T]:
    """argparse prints an ArgumentTypeError's own text after the flag name; keep our wording."""

    def convert(text: str) -> T:
        try:
            return parse_value(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return convert


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    kubeconfig: str | None
    concurrent_syncs: int
    sync_period: float
    tolerance: float
    downscale_stabilization: float
    cpu_initialization_period: float
    initial_readiness_delay: float
    leader_elect: bool
    lease_duration: float
    renew_deadline: float
    retry_period: float
    lease_name: str
    lease_namespace: str
    preview_native_hpas: bool
    metrics_bind_address: str
    metrics_port: int
    metrics_secure: bool
    tls_cert_file: str | None
    tls_private_key_file: str | None
    cert_dir: str | None
    always_allow_paths: AlwaysAllowPaths
    watch_namespace: str | None
    checkpoint_interval: float
    cache_sync_timeout: float
    verbosity: int


def _default_namespace() -> str:
    env = os.environ.get("POD_NAMESPACE")
    if env:
        return env
    try:
        return _SA_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def build_parser(prog: str = "prom-autoscaler-controller run") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Run the PromAutoscaler controller.")
    a = p.add_argument
    dur, pos, flag = _flag_type(_duration), _flag_type(_positive_duration), _flag_type(_bool)
    hpa = "--horizontal-pod-autoscaler-"
    a("--kubeconfig", help="kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)")
    a("--concurrent-syncs", type=_flag_type(_positive_int), default=5, metavar="N",
      help="autoscalers synced at once (default 5)")
    a(hpa + "sync-period", "--sync-period", type=pos, metavar="DURATION", default="15s", dest="sync_period",
      help="period of objects without spec.syncPeriodSeconds (default 15s)")
    a(hpa + "tolerance", type=_flag_type(_tolerance), default="0.1", dest="tolerance", metavar="RATIO",
      help="minimum change of the metric ratio that causes scaling (default 0.1)")
    a(hpa + "downscale-stabilization", type=dur, metavar="DURATION", default="5m0s", dest="downscale_stabilization",
      help="look-back window for scale-down recommendations (default 5m0s)")
    a(hpa + "cpu-initialization-period", type=dur, metavar="DURATION", default="5m0s", dest="cpu_initialization_period",
      help="after pod start, CPU samples may be skipped (default 5m0s)")
    a(hpa + "initial-readiness-delay", type=dur, metavar="DURATION", default="30s", dest="initial_readiness_delay",
      help="after pod start, readiness changes count as initial (default 30s)")
    a("--leader-elect", type=flag, metavar="BOOL", nargs="?", const=True, default=True,
      help="elect a leader through a Lease before syncing (default true; =false for a single replica)")
    a("--leader-elect-lease-duration", type=pos, metavar="DURATION", default="15s", dest="lease_duration",
      help="how long standbys wait after the last renewal before taking over (default 15s)")
    a("--leader-elect-renew-deadline", type=pos, metavar="DURATION", default="10s", dest="renew_deadline",
      help="the leader stops leading if it cannot renew within this (default 10s)")
    a("--leader-elect-retry-period", type=pos, metavar="DURATION", default="2s", dest="retry_period",
      help="between attempts to acquire or renew (default 2s)")
    a("--leader-elect-resource-name", default="prom-autoscaler-controller", dest="lease_name",
      help="name of the Lease (default prom-autoscaler-controller)")
    a("--leader-elect-resource-namespace", default=None, dest="lease_namespace",
      help="namespace of the Lease (default $POD_NAMESPACE, else the service account's namespace)")
    a("--preview-native-hpas", type=flag, metavar="BOOL", nargs="?", const=True, default=False,
      help="also decide for autoscaling/v2 HPAs, read-only: metrics and explanations, no writes")
    a("--metrics-bind-address", default="0.0.0.0", metavar="ADDRESS",
      help="address of /metrics, /healthz, /readyz, /debug (default 0.0.0.0)")
    a("--metrics-port", type=_flag_type(_port), default="8080", metavar="PORT",
      help="port of /metrics, /healthz, /readyz, /debug (default 8080; 0 picks a free port)")
    a("--metrics-secure", type=flag, metavar="BOOL", nargs="?", const=True, default=True,
      help="serve the metrics port over HTTPS and require a bearer token that the API server "
           "authenticates (TokenReview) and authorizes for the path (SubjectAccessReview) (default "
           "true; =false: plain HTTP, anyone who reaches the port reads /metrics and /debug)")
    a("--tls-cert-file", default=None, metavar="FILE",
      help="serving certificate (PEM, chain after the leaf), reloaded when it changes (default: "
           "self-signed, generated into --cert-dir)")
    a("--tls-private-key-file", default=None, metavar="FILE", help="key of --tls-cert-file (PEM)")
    a("--cert-dir", default=None, metavar="DIR",
      help="where the self-signed certificate is kept (default: a new private temporary directory)")
    a("--authorization-always-allow-paths", type=_flag_type(AlwaysAllowPaths.parse), default=DEFAULT_ALWAYS_ALLOW,
      dest="always_allow_paths", metavar="PATHS",
      help=f"paths served without credentials; /p/* allows all under /p/ (default {DEFAULT_ALWAYS_ALLOW})")
    a("--watch-namespace", default=None, metavar="NAMESPACE", help="only this namespace (default all)")
    a("--status-checkpoint-interval", type=dur, metavar="DURATION", default="1m0s", dest="checkpoint_interval",
      help="at most this often the scale history is saved to status between scale writes (default 1m0s)")
    a("--cache-sync-timeout", type=pos, metavar="DURATION", default="60s",
      help="how long to wait for the first list of each watch cache (default 60s)")
    a("-v", "--v", type=int, default=2, dest="verbosity", metavar="LEVEL", help="log verbosity (4: debug)")
    return p


def parse(argv: Sequence[str], *, prog: str = "prom-autoscaler-controller run") -> RunOptions:
    """Parse and validate; argparse exits 2 with the flag's name on a bad value."""
    parser = build_parser(prog)
    ns = parser.parse_args(list(argv))
    if not ns.lease_duration > ns.renew_deadline:
        parser.error("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
    if not ns.renew_deadline > 1.2 * ns.retry_period:
        parser.error("--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period")
    if (ns.tls_cert_file is None) != (ns.tls_private_key_file is None):
        parser.error("--tls-cert-file and --tls-private-key-file go together")
    values = vars(ns)
    values["lease_namespace"] = ns.lease_namespace or _default_namespace()
    values["watch_namespace"] = ns.watch_namespace or None
    return RunOptions(**values)
