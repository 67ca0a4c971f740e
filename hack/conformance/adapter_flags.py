"""Conformance checkers for the Prometheus flags, TLS client material and series discovery
(`adapter.prometheus.settings`, `kubecommon.tls`, `adapter.discovery.relist`), driven with the
map-backed FakePrometheus. See adapter_runner for the contract.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapter.prometheus.fake import FakePrometheus
from hack.conformance.adapter_compare import Result
from hack.conformance.adapter_relist import metric_infos, series_failure
from hack.conformance.adapter_rules import compile_case, judge_outcome


class UnknownFlag(ValueError):
    """A flag the adapter does not have: it refuses to start (pflag: `unknown flag: --x`)."""


def parsed_flags(flags: Mapping[str, Any]) -> argparse.Namespace:
    """The case's flags parsed by the adapter's own command line (every flag it has, not only the
    Prometheus ones). An unknown flag or a value argparse rejects is an error, never the
    SystemExit argparse raises for them, which would end the whole run."""
    from adapter.options import build_parser

    parser = build_parser()
    parser.exit_on_error = False
    argv: list[str] = [] if "--config" in flags else ["--config", "rules.yaml"]
    for flag, value in flags.items():
        if not flag.startswith("--"):
            continue
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        elif value is not None and value != "" and not str(value).startswith("("):
            argv += [flag, str(value)]
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit:
        raise argparse.ArgumentError(None, f"invalid flags: {' '.join(argv)}") from None
    if unknown:
        raise UnknownFlag(f"unknown flag: {unknown[0]}")
    return args


def check_headers(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import settings_from_args

    from adapter.prometheus.settings import SettingsError

    from hack.conformance.adapter_rules import judge_outcome

    try:
        settings = settings_from_args(parsed_flags(case["input"]))
    except (SettingsError, ValueError) as err:
        return judge_outcome(case["expected"], {"success": False, "error": str(err), "fatal_error": str(err)})
    got: dict[str, list[str]] = {}
    for key, value in settings.headers:
        got.setdefault(key, []).append(value)
    return judge_outcome(case["expected"], {"success": True, "http_headers": got})


def check_auth(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import SettingsError, settings_from_args

    try:
        settings_from_args(parsed_flags(case["input"]))
    except SettingsError as err:
        return judge_outcome(case["expected"], {"success": False, "error": str(err)})
    return judge_outcome(case["expected"], {"success": True})


def check_tls(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """Upstream's testdata files are stand-ins: a valid CA/cert/key is generated here, and a
    file named `*error*` holds no certificate, as upstream's does."""
    import ssl

    from kubecommon.tls import client_ssl_context

    data = case["input"]
    ca, client = _tls_material()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for flag, content in (("--prometheus-ca-file", ca.cert_pem),
                              ("--prometheus-client-tls-cert-file", client.cert_pem),
                              ("--prometheus-client-tls-key-file", client.key_pem)):
            name = data.get(flag, "")
            if name:
                path = Path(tmp) / name
                path.write_bytes(b"not a certificate\n" if "error" in name else content)
                paths[flag] = str(path)
        try:
            context = client_ssl_context(ca_file=paths.get("--prometheus-ca-file"),
                                         cert_file=paths.get("--prometheus-client-tls-cert-file"),
                                         key_file=paths.get("--prometheus-client-tls-key-file"))
        except (ssl.SSLError, ValueError, OSError) as err:  # no context: the adapter refuses to start
            return judge_outcome(case["expected"], {"success": False, "error": str(err)})
    got = {"success": True, "client_certificates_present": bool(paths.get("--prometheus-client-tls-cert-file")),
           "min_tls_version": ("1.2" if context.minimum_version >= ssl.TLSVersion.TLSv1_2
                               else str(context.minimum_version))}
    return judge_outcome(case["expected"], got)


@functools.cache
def _tls_material() -> tuple[Any, Any]:
    from kubecommon.tls import generate_ca, issue_certificate

    ca = generate_ca("conformance-ca", key_algorithm="ecdsa")  # P-256: fast to generate
    return ca, issue_certificate(ca, "adapter", server=False, client=True, key_algorithm="ecdsa")


def check_cli_flags(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    from adapter.prometheus.settings import PrometheusSettings
    from adapter.options import options_from_args

    data = case["input"]
    try:
        if "--prometheus-verb" in data:
            PrometheusSettings(verb=data["--prometheus-verb"])
        options_from_args(parsed_flags(data))  # the adapter's own start-up validation of every flag
    except (ValueError, argparse.ArgumentError) as err:
        expected = case["expected"]
        fatal = expected.get("fatal_error") or ""
        # Messages are ours; the contract is "refuses to start, naming the values (quoted) and
        # flags upstream's message names".
        named = [*re.findall(r'"([^"]+)"', fatal), *re.findall(r"--[a-z][a-z0-9-]*", fatal)]
        ok = (bool(fatal) and all(n in str(err) for n in named)
              or (not fatal and expected.get("success") is not True))
        if expected.get("startup_error_contains"):
            ok = ok and str(expected["startup_error_contains"]) in str(err)
        if expected.get("error"):
            from hack.conformance.adapter_rules import _error_matches

            ok = ok and _error_matches(str(expected["error"]), str(err))
        return Result(ok, fatal or expected, str(err))
    refused = [k for k in ("fatal_error", "startup_error_contains", "error") if case["expected"].get(k)]
    return Result(not refused and case["expected"].get("success") is not False, case["expected"], "started")


def check_series_request(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """One relist of the case's setup: the /api/v1/series request it makes, how many it makes
    (one per distinct seriesQuery), and the metrics listed before and after it."""
    from adapter.discovery.relist import Discovery
    from adapter.prometheus.settings import discovery_settings_from_args

    setup = case.get("setup", {})
    compiled = compile_case(setup.get("config") or {"rules": [case.get("rule", {})]})
    settings = discovery_settings_from_args(parsed_flags(setup.get("flags", {})))
    data = case.get("input", {})
    now = data.get("now_unix_ms", 1_700_000_000_000) / 1000.0
    series = series_failure(data) or [dict(s) for s in data.get("discovered_series", [])]
    prom = FakePrometheus(series_by_matcher={r.series_query: series for r in (*compiled.custom, *compiled.external)})
    discovery = Discovery(prom, compiled, interval=settings.relist_interval,
                          max_age=settings.effective_max_age, clock=lambda: now)
    before = metric_infos(discovery.snapshot)
    ok = asyncio.run(discovery.relist())
    call = prom.series_calls[0]
    from adapter.prometheus.client import format_time

    got = {"http_request": {"method": "POST", "path": "/api/v1/series",
                            "query_params": {"match[]": call.matchers[0],
                                             "start": format_time(call.start).rstrip("0").rstrip(".")},
                            "no_end_param": False},
           "prometheus_series_calls": len(prom.series_calls), "before_relist": before,
           "success": ok, **({} if ok else {"error": discovery.stats.last_error}),
           "after_relist_unordered": metric_infos(discovery.snapshot),
           "metrics_unordered": metric_infos(discovery.snapshot)}
    from adapter.server.discovery_docs import custom_resources

    resources = custom_resources(discovery.snapshot.custom_metrics())
    names = [r["name"] for r in resources]
    got.update({"api_resources_unordered": resources, "discovery_names_unordered": names,
                "discovery_resource_names": sorted({n.split("/", 1)[0] for n in names})})
    want = dict(case["expected"])
    if isinstance(want.get("discovery_resource_names"), list):
        want["discovery_resource_names"] = sorted(want["discovery_resource_names"])
    return judge_outcome(want, got)


def check_periodic_lister(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    """Upstream's lister calls back when new metrics are available; ours swaps an immutable
    snapshot and flips `ready`, which is what consumers observe instead of a callback. Its cached
    listing is the snapshot: listing never calls Prometheus, only a relist does."""
    from adapter.discovery.relist import Discovery

    compiled = compile_case({"externalRules": [{"seriesQuery": "queue_depth", "metricsQuery": "queue_depth"}]})
    failure = series_failure(case.get("input"))  # the inner lister's call fails as the case says
    prom = FakePrometheus(series_by_matcher={"queue_depth": failure or [{"__name__": "queue_depth"}]})
    discovery = Discovery(prom, compiled, interval=60.0, clock=lambda: 1000.0)
    before = discovery.snapshot
    first_count, calls_after_first = len(before.external_metrics()), len(prom.series_calls)
    ok = asyncio.run(discovery.relist())
    calls_after_update = len(prom.series_calls)
    second = discovery.snapshot.external_metrics()
    invoked = ok and discovery.ready and discovery.snapshot is not before and bool(second)
    got = {"callback_invoked": invoked, "success": ok, **({} if ok else {"error": discovery.stats.last_error}),
           "first_list_series_count": first_count,
           "inner_calls_after_first_list": calls_after_first, "inner_calls_after_update": calls_after_update,
           "second_list_series_count_nonzero": bool(second),
           "inner_calls_after_second_list": len(prom.series_calls)}
    if "rule" in case or "discovered_series" in case.get("input", {}):
        got.update(_external_discovery(case))
    return judge_outcome(case["expected"], got)


def _external_discovery(case: Mapping[str, Any]) -> dict[str, Any]:
    """The external APIResourceList the case's rule and discovered series give."""
    from adapter.discovery.registry import build_registry
    from adapter.server.discovery_docs import external_resources
    from hack.conformance.adapter_registry import case_series

    compiled = compile_case({"externalRules": [case.get("rule") or {"seriesQuery": "up", "metricsQuery": "up"}]})
    registry = build_registry(compiled, {compiled.external[0].series_query: case_series(case, compiled.external[0])})
    resources = external_resources(registry.external_metrics())
    names = [r["name"] for r in resources]
    return {"discovery": [{"name": r["name"], "namespaced": r["namespaced"]} for r in resources],
            "discovery_names_unordered": names, "discovery_resource_names": sorted(names),
            "api_resources_unordered": resources}


CHECKERS = {
    "cli.prometheus_header": check_headers,
    "cli.prometheus_auth": check_auth,
    "cli.prometheus_tls": check_tls,
    "cli.flags": check_cli_flags,
    "custom.discovery_http": check_series_request,
    "external.discovery": check_periodic_lister,
}
