"""Command-line flags of `python -m adapter` (serve): the whole binary's, named like
prometheus-adapter's, and their validation into a frozen `ServeOptions`.

Whole-binary flags live here: the rule file and its live reload, Kubernetes access for the object
caches, logging. The server's own flags (secure serving, delegated authentication and
authorization) come from `adapter.server.options`, Prometheus and discovery flags from
`adapter.prometheus.settings` (one definition each, shared with tools). Every flag error names
the flag (`OptionsError`).

Non-goals: starting anything (adapter.app); reading files other than the CA bundles the server's
flags name.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapter.prometheus import settings as prom_settings
from adapter.server import options as server_options
from adapter.server.options import OptionsError, ServingOptions, duration_arg

__all__ = ["OptionsError", "ServeOptions", "build_parser", "options_from_args", "parse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    config: Path
    config_reload_interval: float
    kubeconfig: str | None
    cache_sync_timeout: float
    verbosity: int
    serving: ServingOptions
    prometheus: prom_settings.PrometheusSettings
    discovery: prom_settings.DiscoverySettings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m adapter", description=(
        "Serve custom.metrics.k8s.io, external.metrics.k8s.io and metrics.k8s.io from Prometheus."),
        epilog="To validate a rule file without serving: python -m adapter check-config FILE "
               "(see check-config --help).")
    parser.add_argument("--config", required=True, help="rule file (prometheus-adapter format)")
    parser.add_argument("--config-reload-interval", default="10s",
                        help="how often the rule file is checked for changes and reloaded live; 0 turns "
                             "live reload off (extension)")
    parser.add_argument("--v", type=int, default=0, help="log verbosity (0 info, 4+ debug)")
    server_options.add_serving_flags(parser)
    kube = parser.add_argument_group("Kubernetes")
    kube.add_argument("--kubeconfig", "--lister-kubeconfig", dest="kubeconfig", default="",
                      help="kubeconfig for reading objects; in-cluster configuration when empty")
    kube.add_argument("--cache-sync-timeout", default="10s",
                      help="how long a request waits for a watch cache's first list (extension)")
    server_options.add_auth_flags(parser)
    prom_settings.add_flags(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    kubeconfig = args.kubeconfig or None
    serving = server_options.serving_options_from_args(args, kubeconfig=kubeconfig)
    try:
        prometheus = prom_settings.settings_from_args(args)
        discovery = prom_settings.discovery_settings_from_args(args)
    except ValueError as err:
        raise OptionsError(str(err)) from None
    return ServeOptions(
        config=Path(args.config), config_reload_interval=duration_arg(args, "config_reload_interval"),
        kubeconfig=kubeconfig, cache_sync_timeout=max(0.1, duration_arg(args, "cache_sync_timeout")),
        verbosity=args.v, serving=serving, prometheus=prometheus, discovery=discovery,
    )


def parse(argv: Sequence[str]) -> ServeOptions:
    """Parse and validate; argparse exits with status 2 on unknown flags (as pflag does)."""
    return options_from_args(build_parser().parse_args(list(argv)))
