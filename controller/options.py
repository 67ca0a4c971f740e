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
| `--prometheus-url` | none: objects with `spec.prediction` stay reactive and say why | the adapter's flag |
| `--rules` | required with `--prometheus-url` | the adapter's `--config` (the same rule file) |
| `--prometheus-*` credentials and TLS (below) | as the adapter's | the adapter's flags, same meaning |
| `--history-step` | 1m0s | (none: the resolution of the history forecasts read) |
| `--history-max-lookback` | 336h0m0s | (none: a longer `spec.prediction.lookbackSeconds` is capped) |
| `--history-refresh` | 1m0s | (none: at most this often an object's history is read again, a failed read retried) |

The Prometheus flags mirror the adapter's: `--prometheus-ca-file`, `--prometheus-client-tls-cert-file`
/ `-key-file`, `--prometheus-insecure-skip-tls-verify`, `--prometheus-token-file`,
`--prometheus-basic-auth-username` / `-password-file`, `--prometheus-auth-incluster`,
`--prometheus-header KEY=VALUE` (repeatable) and `--prometheus-timeout`.

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
from kubecommon.prometheus_access import SERVICE_ACCOUNT_DIR, PrometheusAccess, in_cluster_files, parse_header

__all__ = ["HistoryOptions", "RunOptions", "build_parser", "parse"]

_SA_NAMESPACE = Path(f"{SERVICE_ACCOUNT_DIR}/namespace")
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
class HistoryOptions(PrometheusAccess):
    """Where forecasts read metric history: the adapter's Prometheus (the access flags both binaries
    share), and the adapter's rule file."""

    prometheus_url: str | None = None  # None: no history, objects with spec.prediction stay reactive
    rules: str | None = None
    step: float = 60.0
    max_lookback: float = 14 * 86_400.0
    refresh: float = 60.0


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
    history: HistoryOptions = HistoryOptions()


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
    _history_flags(p, pos)
    return p


def _history_flags(p: argparse.ArgumentParser, pos: Callable[[str], float]) -> None:
    """The adapter's Prometheus flags (same names), read by spec.prediction's history reader."""
    g = p.add_argument_group("Metric history (spec.prediction), from the adapter's Prometheus")
    a = g.add_argument
    a("--prometheus-url", default=None, metavar="URL",
      help="the Prometheus the adapter reads (default none: objects with spec.prediction stay reactive)")
    a("--rules", default=None, metavar="FILE", help="the adapter's rule file (its --config); needed with "
      "--prometheus-url, so a metric's history is the PromQL the adapter runs for it")
    a("--prometheus-timeout", type=pos, default="30s", metavar="DURATION", help="per range query (default 30s)")
    a("--prometheus-ca-file", default=None, metavar="FILE", help="CA bundle for Prometheus' TLS")
    a("--prometheus-client-tls-cert-file", default=None, metavar="FILE", help="client certificate for mutual TLS")
    a("--prometheus-client-tls-key-file", default=None, metavar="FILE", help="client key for mutual TLS")
    a("--prometheus-insecure-skip-tls-verify", action="store_true", help="do not verify Prometheus' certificate")
    a("--prometheus-token-file", default=None, metavar="FILE", help="bearer token file, re-read on every query")
    a("--prometheus-basic-auth-username", default=None, metavar="USER")
    a("--prometheus-basic-auth-password-file", default=None, metavar="FILE")
    a("--prometheus-auth-incluster", action="store_true",
      help="the pod's service-account token and cluster CA (explicit flags win)")
    a("--prometheus-header", action="append", type=_flag_type(parse_header), default=[], metavar="KEY=VALUE",
      help="extra header on every request, e.g. X-Scope-OrgID=tenant (repeatable)")
    a("--history-step", type=pos, default="1m0s", metavar="DURATION",
      help="resolution of the history forecasts read (default 1m0s)")
    a("--history-max-lookback", type=pos, default="336h0m0s", metavar="DURATION",
      help="spec.prediction.lookbackSeconds beyond this is capped (default 336h0m0s, 14 days)")
    a("--history-refresh", type=pos, default="1m0s", metavar="DURATION",
      help="at most this often an object's history is read again, and a failed read retried; never more often "
           "than --history-step (default 1m0s)")


def _history_options(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> HistoryOptions:
    """The history flags as `HistoryOptions`; argparse exits 2 on a bad combination (as the adapter refuses it)."""
    url, token, ca = ns.prometheus_url, ns.prometheus_token_file, ns.prometheus_ca_file
    if url is not None and not url.startswith(("http://", "https://")):
        parser.error(f"--prometheus-url {url!r}: want an http(s) URL")
    if url is not None and not ns.rules:
        parser.error("--prometheus-url needs --rules (the adapter's rule file)")
    if bool(ns.prometheus_client_tls_cert_file) != bool(ns.prometheus_client_tls_key_file):
        parser.error("--prometheus-client-tls-cert-file and --prometheus-client-tls-key-file go together")
    if token and ns.prometheus_basic_auth_username:
        parser.error("--prometheus-token-file and --prometheus-basic-auth-username are exclusive")
    if bool(ns.prometheus_basic_auth_username) != bool(ns.prometheus_basic_auth_password_file):
        parser.error("--prometheus-basic-auth-username needs --prometheus-basic-auth-password-file")
    if ns.prometheus_auth_incluster and ns.prometheus_basic_auth_username:
        parser.error("--prometheus-auth-incluster and --prometheus-basic-auth-username are exclusive")
    if ns.prometheus_auth_incluster:
        token, ca = in_cluster_files(token, ca)
    return HistoryOptions(
        prometheus_url=url, rules=ns.rules, timeout=ns.prometheus_timeout, ca_file=ca,
        client_cert_file=ns.prometheus_client_tls_cert_file, client_key_file=ns.prometheus_client_tls_key_file,
        insecure_skip_tls_verify=ns.prometheus_insecure_skip_tls_verify, token_file=token,
        basic_auth_username=ns.prometheus_basic_auth_username,
        basic_auth_password_file=ns.prometheus_basic_auth_password_file, headers=tuple(ns.prometheus_header),
        step=ns.history_step, max_lookback=ns.history_max_lookback, refresh=ns.history_refresh)


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
    history = _history_options(parser, ns)
    values = {k: v for k, v in values.items() if not k.startswith(("prometheus_", "history_")) and k != "rules"}
    return RunOptions(**values, history=history)
