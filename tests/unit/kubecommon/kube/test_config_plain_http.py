"""A kubeconfig whose server is plain http (`http://...`, or host:port without a scheme): as in
kubectl, the user's credentials are neither sent nor run there. client-go's clientcmd applies the
user's token, token file, basic auth, client certificate, exec plugin and auth-provider, and the
cluster's TLS settings, only when the transport is TLS (isConfigTransportTLS); the impersonation
headers (`as`, `as-uid`, `as-groups`, `as-user-extra`) are set before that check and are sent over
http too. A user whose in-house proxy is http must learn from the log why the answers are
401/403: the client says once, at start, which credentials it does not send and to which server.

Pinned on `load_kube_config`, then against a local plain-http server next to kubectl itself."""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
from pathlib import Path

import pytest
import yaml

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig, KubeConfigError, load_kube_config
from tests.unit.kubecommon.kube.side_by_side import Seen, api_server, ours_and_kubectls

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
PEM = base64.b64encode(b"PEM").decode()
PLUGIN = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('ran'); print('{}')"


def users(tmp_path: Path) -> dict[str, tuple[dict, str]]:
    """user stanza and the credential the warning names, by test id."""
    (tmp_path / "token").write_text("file-token")
    return {
        "token": ({"token": "secret-token"}, "token"),
        "token-file": ({"tokenFile": "token"}, "tokenFile"),
        "basic-auth": ({"username": "admin", "password": "pw"}, "username/password"),
        "client-certificate": ({"client-certificate-data": PEM, "client-key-data": PEM}, "client certificate"),
        "exec-plugin": ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                                  "args": ["-c", PLUGIN, str(tmp_path / "plugin-ran")],
                                  "interactiveMode": "Never"}}, "exec plugin"),
        "auth-provider": ({"auth-provider": {"name": "oidc", "config": {"id-token": "x"}}}, "auth-provider"),
    }


USER_IDS = ["token", "token-file", "basic-auth", "client-certificate", "exec-plugin", "auth-provider"]


def kubeconfig(tmp_path: Path, server: str, user: dict, *, tls: bool = True) -> Path:
    cluster = {"server": server}
    if tls:
        cluster |= {"certificate-authority-data": base64.b64encode(CA).decode(), "tls-server-name": "kube"}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x"}))
    return path


def credentials(config: KubeConfig) -> tuple:
    return (config.token, config.token_file, config.username, config.password, config.client_cert_file,
            config.client_key_file, config.exec_plugin)


SERVERS = [  # (server as written, the URL used)
    pytest.param("http://kube-proxy.corp:8080", "http://kube-proxy.corp:8080", id="http"),
    pytest.param("HTTP://kube-proxy.corp:8080/", "http://kube-proxy.corp:8080", id="http-any-case"),
    pytest.param("http://kube-proxy.corp/k8s/clusters/c-1", "http://kube-proxy.corp/k8s/clusters/c-1",
                 id="http-with-path-prefix"),
    pytest.param("kube-proxy.corp:8080", "http://kube-proxy.corp:8080", id="no-scheme"),
]


@pytest.mark.parametrize(("written", "url"), SERVERS)
@pytest.mark.parametrize("user_id", USER_IDS)
def test_a_plain_http_server_gets_no_credentials_and_no_tls_settings(tmp_path, written, url, user_id):
    user, named = users(tmp_path)[user_id]
    config = load_kube_config(kubeconfig(tmp_path, written, user))
    assert config.server == url
    assert credentials(config) == (None,) * 7
    assert (config.ca_pem, config.tls_server_name, config.insecure) == (None, None, False)
    assert config.unsent_credentials == (named,)
    assert not (tmp_path / "plugin-ran").exists()


@pytest.mark.parametrize("user_id", [u for u in USER_IDS if u != "auth-provider"])  # refused over https
def test_an_https_server_gets_every_credential(tmp_path, user_id):
    user, _ = users(tmp_path)[user_id]
    config = load_kube_config(kubeconfig(tmp_path, "https://kube.example.com:6443", user))
    assert credentials(config) != (None,) * 7
    assert (config.ca_pem, config.tls_server_name, config.unsent_credentials) == (CA, "kube", ())


def test_every_unsent_credential_is_named(tmp_path):
    user = {"token": "t", "client-certificate-data": PEM, "client-key-data": PEM, "as": "jane",
            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws-iam-authenticator"}}
    config = load_kube_config(kubeconfig(tmp_path, "http://kube-proxy.corp:8080", user))
    assert config.unsent_credentials == ("token", "client certificate", "exec plugin")
    assert config.impersonation == (("Impersonate-User", "jane"),)


IMPERSONATION_WITHOUT_USER = [
    pytest.param({"as-groups": ["devs"]}, id="groups"),
    pytest.param({"as-uid": "42"}, id="uid"),
    pytest.param({"as-user-extra": {"scopes": ["view"]}}, id="user-extra"),
]


@pytest.mark.parametrize("server", ["http://kube-proxy.corp:8080", "https://kube.example.com"])
@pytest.mark.parametrize("user", IMPERSONATION_WITHOUT_USER)
def test_impersonating_groups_uid_or_extra_without_a_user_is_refused_like_kubectl(tmp_path, server, user):
    with pytest.raises(KubeConfigError, match="requesting uid, groups or user-extra for user 'u' without "
                                              "impersonating a user"):
        load_kube_config(kubeconfig(tmp_path, server, {"token": "t", **user}))


# --- the log line a user reads ---------------------------------------------------------------------

async def _started(config: KubeConfig) -> None:
    client = KubeClient(config, timeout=1.0)
    await client.start()
    await client.close()


@pytest.mark.parametrize("user_id", USER_IDS)
async def test_the_client_says_once_at_start_which_credentials_the_http_server_does_not_get(
        tmp_path, caplog, user_id):
    user, named = users(tmp_path)[user_id]
    config = load_kube_config(kubeconfig(tmp_path, "http://kube-proxy.corp:8080", user))
    with caplog.at_level(logging.INFO, logger="kubecommon.kube.client"):
        await _started(config)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text
    message = warnings[0].getMessage()
    for part in ("http://kube-proxy.corp:8080", named, "not sent", "plain http", "https://", "401", "403",
                 str(tmp_path / "kubeconfig")):
        assert part in message, message


@pytest.mark.parametrize(("server", "user"), [
    pytest.param("https://kube.example.com:6443", {"token": "t"}, id="https-with-token"),
    pytest.param("http://kube-proxy.corp:8080", {}, id="http-without-credentials"),
    pytest.param("http://kube-proxy.corp:8080", {"as": "jane"}, id="http-impersonation-only"),
])
async def test_no_warning_when_nothing_is_left_unsent(tmp_path, caplog, server, user):
    with caplog.at_level(logging.INFO, logger="kubecommon.kube.client"):
        await _started(load_kube_config(kubeconfig(tmp_path, server, user, tls=False)))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


# --- against kubectl -------------------------------------------------------------------------------

def _credentials(seen: Seen) -> list[tuple[str, str]]:
    """The auth and impersonation headers; names compare case-insensitively (Go writes
    `Impersonate-Extra-Scopes.k8s%2fio`)."""
    return sorted((name.lower(), value) for name, value in seen.headers
                  if name.lower() == "authorization" or name.lower().startswith("impersonate-"))


KUBECTL_USERS = [*USER_IDS, "impersonation"]


@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_our_client_and_kubectl_send_the_same_to_a_plain_http_server(tmp_path):
    table = users(tmp_path)
    table["impersonation"] = ({"token": "secret-token", "as": "jane", "as-uid": "42", "as-groups": ["g1", "g2"],
                               "as-user-extra": {"scopes.k8s/io": ["a", "b"]}}, "token")
    async with api_server() as server:
        for user_id in KUBECTL_USERS:
            path = kubeconfig(tmp_path, f"http://127.0.0.1:{server.port}", table[user_id][0], tls=False)
            ours, theirs = await ours_and_kubectls(path, server)
            assert _credentials(ours) == _credentials(theirs), user_id
            assert not (tmp_path / "plugin-ran").exists(), user_id
        assert _credentials(theirs) == [("impersonate-extra-scopes.k8s%2fio", "a"),
                                        ("impersonate-extra-scopes.k8s%2fio", "b"), ("impersonate-group", "g1"),
                                        ("impersonate-group", "g2"), ("impersonate-uid", "42"),
                                        ("impersonate-user", "jane")]


@pytest.mark.integration
@pytest.mark.timeout(30)
@pytest.mark.parametrize("user", IMPERSONATION_WITHOUT_USER)
async def test_kubectl_refuses_impersonating_groups_uid_or_extra_without_a_user(tmp_path, user):
    path = kubeconfig(tmp_path, "http://127.0.0.1:1", {"token": "t", **user}, tls=False)
    kubectl = await asyncio.create_subprocess_exec(
        "kubectl", f"--kubeconfig={path}", "get", "--raw", "/api",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(kubectl.communicate(), 20)
    assert kubectl.returncode != 0
    assert "requesting uid, groups or user-extra for u without impersonating a user" in err.decode()
