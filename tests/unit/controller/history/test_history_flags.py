"""The controller's history flags: the adapter's Prometheus flags, same names, refused in the same combinations."""

from __future__ import annotations

import pytest

from controller.options import HistoryOptions, parse

SA = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_without_prometheus_url_there_is_no_history() -> None:
    assert parse([]).history == HistoryOptions()


def test_the_adapters_flags_reach_history_options() -> None:
    h = parse(["--prometheus-url", "https://thanos:9091", "--rules", "/etc/rules/config.yaml",
               "--prometheus-timeout", "20s", "--prometheus-ca-file", "/ca.crt",
               "--prometheus-client-tls-cert-file", "/c.crt", "--prometheus-client-tls-key-file", "/c.key",
               "--prometheus-token-file", "/token", "--prometheus-header", "X-Scope-OrgID=t1",
               "--prometheus-header", "X-B=a=b", "--history-step", "30s", "--history-max-lookback", "168h",
               "--history-refresh", "2m"]).history
    assert h == HistoryOptions(prometheus_url="https://thanos:9091", rules="/etc/rules/config.yaml", timeout=20.0,
                               ca_file="/ca.crt", client_cert_file="/c.crt", client_key_file="/c.key",
                               token_file="/token", headers=(("X-Scope-OrgID", "t1"), ("X-B", "a=b")), step=30.0,
                               max_lookback=7 * 86400.0, refresh=120.0)


def test_auth_incluster_uses_the_pods_token_and_ca_unless_given() -> None:
    h = parse(["--prometheus-url", "https://p", "--rules", "r", "--prometheus-auth-incluster"]).history
    assert (h.token_file, h.ca_file) == (f"{SA}/token", f"{SA}/ca.crt")
    h = parse(["--prometheus-url", "https://p", "--rules", "r", "--prometheus-auth-incluster",
               "--prometheus-ca-file", "/mine.crt"]).history
    assert (h.token_file, h.ca_file) == (f"{SA}/token", "/mine.crt")


@pytest.mark.parametrize(("argv", "says"), [
    pytest.param(["--prometheus-url", "http://p"], "--prometheus-url needs --rules", id="no rule file"),
    pytest.param(["--prometheus-url", "p:9090", "--rules", "r"], "want an http(s) URL", id="not a URL"),
    pytest.param(["--prometheus-url", "http://p", "--rules", "r", "--prometheus-client-tls-cert-file", "c"],
                 "go together", id="a client certificate without its key"),
    pytest.param(["--prometheus-url", "http://p", "--rules", "r", "--prometheus-token-file", "t",
                  "--prometheus-basic-auth-username", "u", "--prometheus-basic-auth-password-file", "p"],
                 "are exclusive", id="token and basic auth"),
    pytest.param(["--prometheus-url", "http://p", "--rules", "r", "--prometheus-basic-auth-username", "u"],
                 "needs --prometheus-basic-auth-password-file", id="basic auth without a password"),
    pytest.param(["--history-step", "0s"], "must be positive", id="a zero step"),
    pytest.param(["--history-refresh", "0s"], "must be positive", id="a zero refresh"),
    pytest.param(["--prometheus-header", "novalue\nx"], "--prometheus-header: invalid header name in 'novalue\\nx'",
                 id="a header name on two lines"),
    pytest.param(["--prometheus-header", "X-A=b\nInjected: 1"], "--prometheus-header: header 'X-A' value has a newline",
                 id="a header value on two lines"),
    pytest.param(["--prometheus-url", "http://p", "--rules", "r", "--prometheus-auth-incluster",
                  "--prometheus-basic-auth-username", "u", "--prometheus-basic-auth-password-file", "p"],
                 "--prometheus-auth-incluster and --prometheus-basic-auth-username are exclusive",
                 id="in-cluster token and basic auth, refused as the adapter refuses them"),
])
def test_bad_combinations_are_usage_errors(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2 and says in capsys.readouterr().err
