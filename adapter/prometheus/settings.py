"""How to reach Prometheus: a settings value and the command-line flags that build it.

Flag names follow prometheus-adapter's `cmd/adapter` so existing Helm values carry over:
`--prometheus-url`, `--prometheus-verb`, `--prometheus-ca-file`,
`--prometheus-client-tls-cert-file`, `--prometheus-client-tls-key-file`,
`--prometheus-token-file`, `--prometheus-header` (repeatable `Key=Value`),
`--metrics-relist-interval`, `--metrics-max-age`. Extensions (not in prometheus-adapter):
`--prometheus-timeout`, `--prometheus-basic-auth-username` / `--prometheus-basic-auth-password-file`,
`--prometheus-insecure-skip-tls-verify`, `--prometheus-max-get-url-length`,
`--prometheus-max-answer-bytes`.
`--prometheus-auth-incluster` uses the pod's service-account token and CA files;
`--prometheus-auth-config` (a kubeconfig) is not supported and fails at start with a clear
message instead of being ignored.

Pure: validation reads no files (the client reads the files when it starts).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from adapter.config.load import parse_duration as parse_model_duration
from kubecommon import gotime
from kubecommon.prometheus_access import PrometheusAccess, in_cluster_files, parse_header

__all__ = [
    "DiscoverySettings",
    "PrometheusSettings",
    "SettingsError",
    "add_flags",
    "discovery_settings_from_args",
    "parse_bytes",
    "parse_duration",
    "parse_header_args",
    "settings_from_args",
]

DEFAULT_MAX_ANSWER_BYTES = 16 * 2**20


class SettingsError(ValueError):
    """A flag value is invalid; the message names the flag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrometheusSettings(PrometheusAccess):
    """The adapter's Prometheus client: the access both binaries share, plus how it queries."""

    url: str = "https://localhost"
    # "GET" sends short queries as GET and long ones as POST; "POST" always POSTs.
    verb: str = "GET"
    # Longer GET URLs are sent as POST: proxies in front of Prometheus commonly cap request
    # lines at 4-8 KiB (HTTP 414, crane#907 in the spec's pain points).
    max_get_url_length: int = 4096
    #: Connections to Prometheus at once, per pool: instant queries (`http1`) have one, series
    #: reads and health checks (aiohttp) the other.
    max_connections: int = 64
    #: Largest instant-query answer read (bytes). An answer decodes to ~10x its size in Python
    #: objects: 16 MiB (~130k samples) keeps a replica inside the chart's 512Mi memory limit
    #: with room for concurrent requests; a 50 MB answer once took a replica to 825 MiB.
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SettingsError(f"--prometheus-url: {self.url!r} is not an http(s) URL")
        if self.verb not in ("GET", "POST"):
            raise SettingsError(f"--prometheus-verb: must be GET or POST, not {self.verb!r}")
        if self.timeout <= 0:
            raise SettingsError("--prometheus-timeout: must be positive")
        if self.max_answer_bytes < 1024:
            raise SettingsError("--prometheus-max-answer-bytes: must be at least 1Ki")
        if bool(self.client_cert_file) != bool(self.client_key_file):
            raise SettingsError(
                "--prometheus-client-tls-cert-file and --prometheus-client-tls-key-file "
                "must be given together"
            )
        if self.token_file and self.basic_auth_username:
            raise SettingsError(
                "--prometheus-token-file and --prometheus-basic-auth-username are exclusive"
            )
        if bool(self.basic_auth_username) != bool(self.basic_auth_password_file):
            raise SettingsError(
                "--prometheus-basic-auth-username needs --prometheus-basic-auth-password-file"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoverySettings:
    relist_interval: float = 600.0
    # prometheus-adapter: 0 means "the relist interval" (PR #230).
    max_age: float = field(default=0.0)

    @property
    def effective_max_age(self) -> float:
        return self.max_age or self.relist_interval


def parse_duration(text: str, *, flag: str = "") -> float:
    """A duration flag in seconds, never negative.

    Go's `time.ParseDuration`, as prometheus-adapter reads its duration flags (`90s`, `1m30s`,
    `10m0s`, `500ms`; the rules are kubecommon.gotime's). Kept for existing command lines:
    Prometheus's `model.Duration` units (`1d`, `2w`, `1y`, the rule file's `window` grammar) and
    bare seconds (`45`)."""
    value = text.strip()
    seconds: float | None
    try:
        seconds = gotime.parse_duration(value)
    except gotime.DurationError:
        seconds = _prometheus_or_bare_seconds(value)
    if seconds is None or seconds < 0:
        raise SettingsError(f"{flag or 'duration'}: invalid duration {text!r} (e.g. 30s, 1m30s)")
    return seconds


def _prometheus_or_bare_seconds(value: str) -> float | None:
    try:
        return parse_model_duration(value)
    except ValueError:
        pass
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None  # `inf` and `nan` parse as floats


def parse_header_args(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`Key=Value` (split on the first `=`; `Key` alone means an empty value), as upstream."""
    try:
        return tuple(parse_header(item) for item in values)
    except ValueError as err:
        raise SettingsError(f"--prometheus-header: {err}") from None


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the Prometheus and discovery flags (prometheus-adapter names) to `parser`."""
    group = parser.add_argument_group("Prometheus")
    group.add_argument("--prometheus-url", default="https://localhost",
                       help="base URL of the Prometheus API (a path prefix is kept)")
    group.add_argument("--prometheus-verb", default="GET", choices=("GET", "POST"),
                       help="GET (long queries still go as POST) or POST for every query")
    group.add_argument("--prometheus-timeout", default="30s",
                       help="per-call timeout, also sent to Prometheus as `timeout` (extension)")
    group.add_argument("--prometheus-ca-file", default="", help="CA bundle for Prometheus' TLS")
    group.add_argument("--prometheus-client-tls-cert-file", default="",
                       help="client certificate for mutual TLS with Prometheus")
    group.add_argument("--prometheus-client-tls-key-file", default="",
                       help="client key for mutual TLS with Prometheus")
    group.add_argument("--prometheus-insecure-skip-tls-verify", action="store_true",
                       help="do not verify Prometheus' certificate (extension; testing only)")
    group.add_argument("--prometheus-token-file", default="",
                       help="file holding a bearer token; re-read when it changes")
    group.add_argument("--prometheus-basic-auth-username", default="", help="(extension)")
    group.add_argument("--prometheus-basic-auth-password-file", default="", help="(extension)")
    group.add_argument("--prometheus-header", action="append", default=[], metavar="KEY=VALUE",
                       help="extra header on every request, e.g. X-Scope-OrgID=tenant (repeatable)")
    group.add_argument("--prometheus-max-get-url-length", type=int, default=4096,
                       help="send queries whose GET URL would be longer as POST (extension)")
    group.add_argument("--prometheus-max-answer-bytes", default="16Mi",
                       help="refuse a Prometheus answer larger than this (bytes, or 16Mi, 64Mi; "
                            "extension): one huge answer must not take the pod past its memory limit")
    group.add_argument("--prometheus-auth-incluster", action="store_true",
                       help="authenticate with the pod's service-account token and cluster CA")
    group.add_argument("--prometheus-auth-config", default="", help=argparse.SUPPRESS)
    disc = parser.add_argument_group("Series discovery")
    disc.add_argument("--metrics-relist-interval", default="10m",
                      help="how often to rediscover series (prometheus-adapter default 10m)")
    disc.add_argument("--metrics-max-age", default="0s",
                      help="look-back window of discovery; 0 means the relist interval")


def settings_from_args(args: argparse.Namespace) -> PrometheusSettings:
    """Build settings from flags added by `add_flags`; raises `SettingsError` naming the flag."""
    if args.prometheus_auth_config:
        raise SettingsError(
            "--prometheus-auth-config (a kubeconfig for Prometheus) is not supported; use "
            "--prometheus-token-file, --prometheus-ca-file and the client certificate flags"
        )
    token_file, ca_file = args.prometheus_token_file, args.prometheus_ca_file
    if args.prometheus_auth_incluster:
        if args.prometheus_basic_auth_username:
            raise SettingsError("--prometheus-auth-incluster and --prometheus-basic-auth-username "
                                "are exclusive")
        token_file, ca_file = in_cluster_files(token_file, ca_file)
    return PrometheusSettings(
        url=args.prometheus_url,
        verb=args.prometheus_verb,
        timeout=parse_duration(args.prometheus_timeout, flag="--prometheus-timeout"),
        ca_file=ca_file or None,
        client_cert_file=args.prometheus_client_tls_cert_file or None,
        client_key_file=args.prometheus_client_tls_key_file or None,
        insecure_skip_tls_verify=args.prometheus_insecure_skip_tls_verify,
        token_file=token_file or None,
        basic_auth_username=args.prometheus_basic_auth_username or None,
        basic_auth_password_file=args.prometheus_basic_auth_password_file or None,
        headers=parse_header_args(args.prometheus_header),
        max_get_url_length=args.prometheus_max_get_url_length,
        max_answer_bytes=parse_bytes(args.prometheus_max_answer_bytes, flag="--prometheus-max-answer-bytes"),
    )


def parse_bytes(text: str, *, flag: str) -> int:
    """A byte count as a Kubernetes quantity (`16Mi`, `20M`, `1048576`)."""
    from kubecommon.quantity import Quantity, QuantityError

    try:
        value = Quantity.parse(text.strip()).value
    except QuantityError:
        raise SettingsError(f"{flag}: {text!r} is not a byte count (e.g. 16Mi)") from None
    if value != value.to_integral_value() or value <= 0:
        raise SettingsError(f"{flag}: {text!r} is not a positive whole number of bytes")
    return int(value)


def discovery_settings_from_args(args: argparse.Namespace) -> DiscoverySettings:
    interval = parse_duration(args.metrics_relist_interval, flag="--metrics-relist-interval")
    max_age = parse_duration(args.metrics_max_age, flag="--metrics-max-age")
    if interval <= 0:
        raise SettingsError("--metrics-relist-interval: must be positive")
    if max_age and max_age < interval:
        # prometheus-adapter rejects this too: series would flicker in and out of discovery.
        raise SettingsError(
            "--metrics-max-age: must be 0 or at least --metrics-relist-interval "
            f"({args.metrics_max_age} < {args.metrics_relist_interval})"
        )
    return DiscoverySettings(relist_interval=interval, max_age=max_age)
