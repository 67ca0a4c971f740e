"""Serve flags (adapter.options, with the server's own in adapter.server.options): Kubernetes-style
names and defaults, errors that name the flag."""

import pytest

from adapter.options import OptionsError, build_parser, parse


def test_defaults_follow_k8s_apiserver(tmp_path):
    options = parse(["--config=rules.yaml"])
    serving = options.serving
    assert (serving.secure_port, serving.bind_address, serving.tls_min_version) == (6443, "0.0.0.0", "VersionTLS12")
    assert serving.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (serving.token_cache_ttl, serving.authorized_ttl, serving.unauthorized_ttl) == (10.0, 10.0, 10.0)
    assert not serving.insecure_disable_auth and not serving.anonymous_auth and not serving.skip_lookup
    assert options.kubeconfig is None and serving.authentication_kubeconfig is None
    assert options.discovery.relist_interval == 600.0


def test_auth_kubeconfigs_default_to_the_main_one():
    options = parse(["--config=r", "--kubeconfig=/k", "--authorization-kubeconfig=/z"])
    serving = options.serving
    assert (options.kubeconfig, serving.authentication_kubeconfig, serving.authorization_kubeconfig) == (
        "/k", "/k", "/z")


def test_requestheader_flags(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    options = parse(["--config=r", f"--requestheader-client-ca-file={ca}",
                     "--requestheader-allowed-names=front-proxy-client, aggregator",
                     "--requestheader-username-headers=X-Remote-User", "--authorization-always-allow-paths=/healthz,/debug/*",
                     "--authorization-webhook-cache-authorized-ttl=5m", "--anonymous-auth=true"])
    flags = options.serving.authn_flags
    assert flags.requestheader_ca_pem.startswith(b"-----BEGIN") and flags.client_ca_pem == b""
    assert flags.allowed_names == ("front-proxy-client", "aggregator")
    assert flags.username_headers == ("X-Remote-User",)
    assert options.serving.always_allow_paths == ("/healthz", "/debug/*")
    assert options.serving.authorized_ttl == 300.0 and options.serving.anonymous_auth


@pytest.mark.parametrize("args, flag", [
    pytest.param(["--client-ca-file=/does/not/exist"], "--client-ca-file", id="unreadable CA"),
    pytest.param(["--authentication-token-webhook-cache-ttl=later"], "--authentication-token-webhook-cache-ttl",
                 id="bad duration"),
    pytest.param(["--tls-private-key-file=/k"], "--tls-cert-file", id="key without cert"),
    pytest.param(["--secure-port=70000"], "--secure-port", id="port out of range"),
    pytest.param(["--metrics-relist-interval=0s"], "--metrics-relist-interval", id="zero relist interval"),
])
def test_bad_values_name_the_flag(args, flag):
    with pytest.raises(OptionsError, match=flag):
        parse(["--config=r", *args])


def test_ca_file_without_certificates(tmp_path):
    empty = tmp_path / "empty.pem"
    empty.write_text("nothing here")
    with pytest.raises(OptionsError, match="contains no PEM certificate"):
        parse(["--config=r", f"--requestheader-client-ca-file={empty}"])


def test_help_points_to_check_config(capsys):
    """`--help` shows the serving flags; a user looking for how to validate a rule file finds the
    check-config subcommand there."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    assert "python -m adapter check-config FILE" in capsys.readouterr().out
