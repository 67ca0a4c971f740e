"""Prometheus/discovery flags keep prometheus-adapter's names and defaults; bad values fail
naming the flag."""

from __future__ import annotations

import argparse

import pytest

from adapter.prometheus.settings import (
    DiscoverySettings,
    PrometheusSettings,
    SettingsError,
    add_flags,
    discovery_settings_from_args,
    parse_duration,
    parse_header_args,
    settings_from_args,
)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return parser.parse_args(list(argv))


def test_defaults_match_prometheus_adapter() -> None:
    args = parse()
    settings = settings_from_args(args)
    assert settings.url == "https://localhost"  # upstream TestFlags
    assert settings.verb == "GET"
    assert discovery_settings_from_args(args) == DiscoverySettings(relist_interval=600.0,
                                                                   max_age=0.0)
    assert discovery_settings_from_args(args).effective_max_age == 600.0


def test_helm_values_style_flags() -> None:
    args = parse("--prometheus-url=http://prometheus.monitoring.svc:9090/",
                 "--prometheus-verb=POST", "--prometheus-ca-file=/ca.crt",
                 "--prometheus-client-tls-cert-file=/tls.crt",
                 "--prometheus-client-tls-key-file=/tls.key",
                 "--prometheus-token-file=/var/run/secrets/token",
                 "--prometheus-header=X-Scope-OrgID=tenant-a",
                 "--prometheus-header", "Accept-Encoding=gzip",
                 "--metrics-relist-interval=1m", "--metrics-max-age=5m")
    assert settings_from_args(args) == PrometheusSettings(
        url="http://prometheus.monitoring.svc:9090/", verb="POST", ca_file="/ca.crt",
        client_cert_file="/tls.crt", client_key_file="/tls.key",
        token_file="/var/run/secrets/token",
        headers=(("X-Scope-OrgID", "tenant-a"), ("Accept-Encoding", "gzip")))
    assert discovery_settings_from_args(args) == DiscoverySettings(relist_interval=60.0,
                                                                   max_age=300.0)


def test_in_cluster_auth_uses_the_service_account_files() -> None:
    settings = settings_from_args(parse("--prometheus-auth-incluster"))
    assert settings.token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert settings.ca_file == "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    explicit = settings_from_args(parse("--prometheus-auth-incluster",
                                        "--prometheus-ca-file=/etc/prometheus-ca.crt"))
    assert explicit.ca_file == "/etc/prometheus-ca.crt"


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param(["X-Scope-OrgID=tenant-a"], (("X-Scope-OrgID", "tenant-a"),), id="key=value"),
    pytest.param(["Authorization=Bearer a=b"], (("Authorization", "Bearer a=b"),),
                 id="split on the first ="),
    pytest.param(["X-Empty"], (("X-Empty", ""),), id="key alone is an empty value"),
    pytest.param(["Foo=bar", "Foo=baz"], (("Foo", "bar"), ("Foo", "baz")),
                 id="repeated keys add values"),
])
def test_header_args(values: list[str], expected: tuple[tuple[str, str], ...]) -> None:
    assert parse_header_args(values) == expected


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--prometheus-url=localhost:9090"], "--prometheus-url", id="url without scheme"),
    pytest.param(["--prometheus-header==v"], "--prometheus-header", id="header without name"),
    pytest.param(["--prometheus-header=Bad Name=v"], "--prometheus-header", id="space in name"),
    pytest.param(["--prometheus-client-tls-cert-file=/c"], "--prometheus-client-tls-key-file",
                 id="cert without key"),
    pytest.param(["--prometheus-timeout=soon"], "--prometheus-timeout", id="bad timeout"),
    pytest.param(["--prometheus-auth-config=/kubeconfig"], "--prometheus-token-file",
                 id="unsupported kubeconfig auth says what to use"),
    pytest.param(["--prometheus-token-file=/t", "--prometheus-basic-auth-username=u",
                  "--prometheus-basic-auth-password-file=/p"], "exclusive",
                 id="token and basic auth together"),
])
def test_bad_prometheus_flags_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings_from_args(parse(*argv))


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--metrics-relist-interval=0s"], "--metrics-relist-interval", id="zero interval"),
    pytest.param(["--metrics-relist-interval=1m", "--metrics-max-age=30s"], "--metrics-max-age",
                 id="max age shorter than the interval"),
    pytest.param(["--metrics-max-age=1x"], "--metrics-max-age", id="bad unit"),
])
def test_bad_discovery_flags_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        discovery_settings_from_args(parse(*argv))


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("10m0s", 600.0, id="Go's String() form"),
    pytest.param("1m30s", 90.0, id="compound"),
    pytest.param("500ms", 0.5, id="milliseconds"),
    pytest.param("1h", 3600.0, id="hours"),
    pytest.param("1.5h", 5400.0, id="Go fraction"),
    pytest.param("250us", 0.00025, id="Go microseconds"),
    pytest.param("1d", 86400.0, id="Prometheus days"),
    pytest.param("1w1d", 8 * 86400.0, id="Prometheus weeks"),
    pytest.param("45", 45.0, id="bare seconds"),
    pytest.param(" 30s ", 30.0, id="spaces around"),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "-5", "-5s", "1e999", "", "5 minutes", "1.5d", "1x"])
def test_parse_duration_rejects_what_is_not_a_length_of_time(text: str) -> None:
    with pytest.raises(SettingsError, match="--prometheus-timeout: invalid duration"):
        parse_duration(text, flag="--prometheus-timeout")
