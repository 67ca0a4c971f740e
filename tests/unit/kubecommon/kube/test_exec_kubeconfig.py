"""kubeconfig users with an `exec` credential plugin (as EKS, GKE and AKS write them): the client
runs the plugin off the event loop, sends its token (or client certificate), re-runs it when the
credential expires or the server answers 401, and reports a broken plugin clearly.

Every test that runs the plugin (a real process) is marked integration with its own time limit.
Some use the in-process API server over HTTPS (bearer token "t0ken"; a kubeconfig's credentials
are sent only over https, as kubectl sends them); others the real stand-in over HTTPS,
with our client and with kubectl itself reading the same kubeconfig."""

from __future__ import annotations

import base64
import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfigError, load_kube_config
from kubecommon.kube.errors import KubeUnavailable
from kubecommon.kube.exec_auth import ExecCredentials, ExecPlugin, ExecPluginError


PLUGIN = textwrap.dedent('''
    import json, os, pathlib, sys
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    runs = pathlib.Path(os.environ["RUNS_FILE"])
    previous = runs.read_text() if runs.exists() else ""
    runs.write_text(previous + info["apiVersion"] + "\\n")
    if os.environ.get("INFO_FILE"):
        pathlib.Path(os.environ["INFO_FILE"]).write_text(json.dumps(info))
    mode = os.environ["MODE"]
    if mode == "hang":
        import time
        time.sleep(60)
    if mode == "fail":
        print("no credentials for you", file=sys.stderr)
        sys.exit(1)
    if mode == "garbage":
        print("not json")
        sys.exit(0)
    status = {}
    if mode == "token" or (mode == "bad-then-good" and previous):
        status["token"] = os.environ["TOKEN"]
    elif mode == "bad-then-good":
        status["token"] = "stale"
    elif mode == "cert":
        status["clientCertificateData"] = pathlib.Path(os.environ["CERT"]).read_text()
        status["clientKeyData"] = pathlib.Path(os.environ["KEY"]).read_text()
    if os.environ.get("EXPIRES"):
        status["expirationTimestamp"] = os.environ["EXPIRES"]
    print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
''')

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


def exec_kubeconfig(tmp_path: Path, server: str, *, mode: str, api_version: str = V1, cluster: dict | None = None,
                    **env: str) -> Path:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    variables = {"MODE": mode, "RUNS_FILE": str(tmp_path / "runs"), **env}
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
           "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
           "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
           "users": [{"name": "u", "user": {"exec": {
               "apiVersion": api_version, "command": sys.executable, "args": ["-S", str(script)],
               "env": [{"name": k, "value": v} for k, v in variables.items()],
               "interactiveMode": "Never", "provideClusterInfo": False}}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def trusting(api) -> dict:
    """The cluster fields that make a kubeconfig trust the in-process server's HTTPS certificate
    (its user's credentials are sent only over https, as kubectl sends them)."""
    return {"certificate-authority-data": base64.b64encode(api.ca_pem).decode()}


def runs(tmp_path: Path) -> list[str]:
    return (tmp_path / "runs").read_text().split()




@pytest.mark.integration
@pytest.mark.timeout(30)
@pytest.mark.parametrize("api_version", [V1, V1BETA1], ids=["v1", "v1beta1"])
async def test_token_from_the_plugin_authenticates_and_is_reused(https_server, tmp_path, api_version):
    config = load_kube_config(exec_kubeconfig(tmp_path, https_server.url, cluster=trusting(https_server),
                                              mode="token", api_version=api_version, TOKEN="t0ken"))
    client = KubeClient(config, timeout=2.0)
    await client.start()
    try:
        for _ in range(3):
            doc = await client.get("/api/v1/namespaces/default/configmaps/settings")
            assert doc["metadata"]["name"] == "settings"
    finally:
        await client.close()
    assert runs(tmp_path) == [api_version]  # no expiry: one run serves every request


@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_a_401_reruns_the_plugin_once(https_server, tmp_path):
    config = load_kube_config(exec_kubeconfig(tmp_path, https_server.url, cluster=trusting(https_server),
                                              mode="bad-then-good", TOKEN="t0ken"))
    client = KubeClient(config, timeout=2.0)
    await client.start()
    try:
        assert (await client.get("/api/v1/namespaces/default/configmaps/settings"))["metadata"]["name"] == "settings"
    finally:
        await client.close()
    assert len(runs(tmp_path)) == 2


@pytest.mark.integration
@pytest.mark.timeout(30)
@pytest.mark.parametrize(("mode", "message"), [
    ("fail", "exec plugin .* exited with status 1: no credentials for you"),
    ("garbage", "exec plugin .*: output is not an ExecCredential \\(not JSON"),
    ("empty", "exec plugin .*: status has neither token nor clientCertificateData"),
])
async def test_a_broken_plugin_is_a_clear_unavailable_error(https_server, tmp_path, mode, message):
    path = exec_kubeconfig(tmp_path, https_server.url, cluster=trusting(https_server), mode=mode)
    client = KubeClient(load_kube_config(path), timeout=2.0)
    await client.start()
    try:
        with pytest.raises(KubeUnavailable, match=message):
            await client.get("/api/v1/namespaces/default/configmaps/settings")
    finally:
        await client.close()


@pytest.mark.integration
@pytest.mark.timeout(30)
@pytest.mark.parametrize("expires", ["2030-01-01 00:00:00Z", "2030-01-01T00:00:00"], ids=["space for T", "no zone"])
async def test_an_expiry_client_go_would_refuse_is_a_clear_error(tmp_path, expires):
    exec_kubeconfig(tmp_path, "https://unused", mode="token", TOKEN="t0ken", EXPIRES=expires)
    stanza = yaml.safe_load((tmp_path / "kubeconfig").read_text())["users"][0]["user"]["exec"]
    credentials = ExecCredentials(ExecPlugin.from_kubeconfig(stanza, cwd=str(tmp_path), cluster=None),
                                  clock=lambda: 0.0)
    with pytest.raises(ExecPluginError, match=f"expirationTimestamp '{expires}' is not an RFC 3339 time"):
        await credentials.current()


@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_expiring_credentials_are_renewed_before_they_expire(tmp_path):
    exec_kubeconfig(tmp_path, "https://unused", mode="token", TOKEN="t0ken", EXPIRES="2030-01-01T00:00:00Z")
    stanza = yaml.safe_load((tmp_path / "kubeconfig").read_text())["users"][0]["user"]["exec"]
    expires = 1893456000.0  # 2030-01-01T00:00:00Z
    now = [expires - 3600]
    credentials = ExecCredentials(ExecPlugin.from_kubeconfig(stanza, cwd=str(tmp_path), cluster=None),
                                  clock=lambda: now[0])
    first = await credentials.current()
    assert (first.token, first.expires_at) == ("t0ken", expires)
    assert await credentials.current() is first
    now[0] = expires - 5  # inside the safety margin
    assert await credentials.current() is not first
    assert len(runs(tmp_path)) == 2


@pytest.mark.parametrize(("stanza", "message"), [
    ({"apiVersion": V1}, "exec: 'command' is required"),
    ({"command": "aws", "apiVersion": "client.authentication.k8s.io/v1alpha1"}, "apiVersion .*v1alpha1.* is not one of"),
    ({"command": "aws", "apiVersion": V1, "env": [{"name": "A"}]}, "'env' must be a list of"),
], ids=["no-command", "removed-v1alpha1", "env-without-value"])
def test_bad_exec_stanzas_are_rejected_at_load(tmp_path, stanza, message):
    doc = {"current-context": "ctx", "clusters": [{"name": "c", "cluster": {"server": "https://x"}}],
           "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
           "users": [{"name": "u", "user": {"exec": stanza}}]}
    (tmp_path / "kubeconfig").write_text(json.dumps(doc))
    with pytest.raises(KubeConfigError, match=message):
        load_kube_config(tmp_path / "kubeconfig")


def test_kubeconfig_lists_are_merged_like_kubectl(tmp_path):
    (tmp_path / "a").write_text(yaml.safe_dump({
        "current-context": "ctx", "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://one:6443", "certificate-authority": "ca.crt"}}]}))
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nCA\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_text(yaml.safe_dump({"users": [{"name": "u", "user": {"tokenFile": "tok"}}]}))
    (tmp_path / "sub" / "tok").write_text("t")
    config = load_kube_config(f"{tmp_path / 'a'}:{tmp_path / 'sub' / 'b'}")
    assert (config.server, config.ca_pem) == ("https://one:6443", b"-----BEGIN CERTIFICATE-----\nCA\n")
    assert config.token_file == str(tmp_path / "sub" / "tok")  # relative to the file that named it


# --- the real stand-in (HTTPS): our client and kubectl read the same kubeconfig -------------------

def _standin_exec_kubeconfig(standin, tmp_path: Path, **plugin) -> Path:
    cluster = yaml.safe_load(standin.kubeconfig.read_text())["clusters"][0]["cluster"]
    return exec_kubeconfig(tmp_path, cluster["server"], cluster={
        k: v for k, v in cluster.items() if k != "server"}, **plugin)


async def _whoami(config, *, get: str = "") -> str:
    client = KubeClient(config, timeout=10.0)
    await client.start()
    try:
        review = await client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                   {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        if get:
            assert (await client.get(get))["metadata"]["name"]
    finally:
        await client.close()
    return str(review["status"]["userInfo"]["username"])


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("api_version", [V1, V1BETA1], ids=["v1", "v1beta1"])
async def test_exec_token_against_the_standin_for_client_and_kubectl(kube_standin, tmp_path, api_version):
    path = _standin_exec_kubeconfig(kube_standin, tmp_path, mode="token", api_version=api_version,
                                    TOKEN=kube_standin.admin_token)
    admin = await _whoami(load_kube_config(path), get="/api/v1/namespaces/default")
    result = kube_standin.kubectl("get", "namespace", "default", "-o", "name", kubeconfig=path)
    assert result.stdout.strip() == "namespace/default"
    whoami = kube_standin.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=path)
    assert whoami.stdout.strip() == admin


@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_exec_client_certificate_against_the_standin(kube_standin, tmp_path):
    cert, key = kube_standin.cert_user
    path = _standin_exec_kubeconfig(kube_standin, tmp_path, mode="cert", CERT=str(cert), KEY=str(key))
    assert await _whoami(load_kube_config(path)) == "standin-user"
    whoami = kube_standin.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=path)
    assert whoami.stdout.strip() == "standin-user"


# --- a plugin that hangs, a terminal it must not use, and the cluster info it is given -------------

@pytest.mark.integration
@pytest.mark.timeout(15)
async def test_a_hung_plugin_fails_the_request_within_its_timeout(https_server, tmp_path):
    path = exec_kubeconfig(tmp_path, https_server.url, cluster=trusting(https_server), mode="hang")
    client = KubeClient(load_kube_config(path), timeout=1.0)
    await client.start()
    try:
        with pytest.raises(KubeUnavailable, match=r"exec plugin .*python.* gave no credential within 1 s"):
            await client.get("/api/v1/namespaces/default/configmaps/settings")
    finally:
        await client.close()
    import subprocess
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "plugin.py")], capture_output=True, text=True)
    assert left.stdout == ""  # closing the client stopped the plugin


@pytest.mark.integration
@pytest.mark.timeout(15)
async def test_a_hung_plugin_is_killed_and_a_later_request_runs_it_again(tmp_path):
    exec_kubeconfig(tmp_path, "https://unused", mode="hang")
    stanza = yaml.safe_load((tmp_path / "kubeconfig").read_text())["users"][0]["user"]["exec"]
    plugin = ExecPlugin.from_kubeconfig(stanza, cwd=str(tmp_path), cluster=None)
    with pytest.raises(ExecPluginError, match=r"exec plugin .*: no answer within 0.5 s; stopped it"):
        await plugin.run(timeout=0.5)


@pytest.mark.parametrize(("command", "hint", "message"), [
    ("no-such-plugin-x", "", r"exec plugin 'no-such-plugin-x' not found \(is it installed and on PATH\?\)$"),
    ("no-such-plugin-x", "brew install x", r"exec plugin 'no-such-plugin-x' not found .*: brew install x"),
], ids=["no-hint", "install-hint"])
async def test_a_missing_plugin_is_named_with_its_install_hint(tmp_path, command, hint, message):
    stanza = {"apiVersion": V1, "command": command, "installHint": hint}
    plugin = ExecPlugin.from_kubeconfig(stanza, cwd=str(tmp_path), cluster=None)
    with pytest.raises(ExecPluginError, match=message):
        await plugin.run()


def test_interactive_mode_always_is_refused_at_load(tmp_path):
    with pytest.raises(ValueError, match="interactiveMode Always needs a terminal"):
        ExecPlugin.from_kubeconfig({"apiVersion": V1, "command": "x", "interactiveMode": "Always"},
                                   cwd=str(tmp_path), cluster=None)


@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_provide_cluster_info_gives_the_plugin_what_kubectl_gives_it(tmp_path):
    """The same kubeconfig (CA as a file relative to it, an exec extension) run by kubectl and by us:
    the plugin sees the same KUBERNETES_EXEC_INFO (CA as data, the extension as `config`,
    not interactive)."""
    import base64
    import os
    import subprocess

    from kubecommon.tls import generate_ca

    ca_pem = generate_ca("test-ca", key_algorithm="ecdsa").cert_pem
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    path = exec_kubeconfig(tmp_path, "https://127.0.0.1:1", mode="token", TOKEN="t0ken",
                           INFO_FILE=str(tmp_path / "info.json"), cluster={
                               "certificate-authority": "ca.crt", "tls-server-name": "api.example",
                               "extensions": [{"name": "client.authentication.k8s.io/exec",
                                               "extension": {"audience": "kube"}}]})
    doc = yaml.safe_load(path.read_text())
    doc["users"][0]["user"]["exec"]["provideClusterInfo"] = True
    path.write_text(yaml.safe_dump(doc))
    subprocess.run(["kubectl", "--kubeconfig", str(path), "--request-timeout=3s", "get", "--raw", "/version"],
                   capture_output=True, stdin=subprocess.DEVNULL, timeout=20, env=dict(os.environ))
    from_kubectl = json.loads((tmp_path / "info.json").read_text())
    (tmp_path / "info.json").unlink()
    credentials = ExecCredentials(load_kube_config(path).exec_plugin)
    await credentials.current()
    ours = json.loads((tmp_path / "info.json").read_text())
    assert from_kubectl["spec"]["cluster"]["certificate-authority-data"] == base64.b64encode(ca_pem).decode()
    assert ours == from_kubectl


def test_a_quoted_provide_cluster_info_is_refused_like_kubectl(tmp_path):
    with pytest.raises(ValueError, match="'provideClusterInfo' must be true or false"):
        ExecPlugin.from_kubeconfig({"apiVersion": V1, "command": "x", "provideClusterInfo": "false"},
                                   cwd=str(tmp_path), cluster={"server": "https://x"})
