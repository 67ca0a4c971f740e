"""A kubeconfig `server:` written without a scheme (`10.0.0.1:6443`, `localhost:8001`), read as
kubectl reads it. client-go's clientcmd decides whether the connection is TLS before it has read
the cluster's CA or the user's credentials, so such a server is plain `http://` and kubectl sends
it neither a token nor a client certificate (only the impersonation headers, set earlier); a
path after host:port is refused ("host must be a URL or a host:port pair").

Pinned on `load_kube_config`, then shown against a local server next to kubectl itself."""

from __future__ import annotations

import base64

import pytest
import yaml

from kubecommon.kube.config import KubeConfigError, load_kube_config
from tests.unit.kubecommon.kube.side_by_side import api_server, ours_and_kubectls

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def kubeconfig(tmp_path, server: str, *, ca: bool = True, **user):
    path = tmp_path / "kubeconfig"
    cluster = {"server": server, "tls-server-name": "kube"}
    if ca:
        cluster["certificate-authority-data"] = base64.b64encode(CA).decode()
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "secret-token", "as": "jane", **user}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x"}))
    return path


READ = [  # (server as written, the URL used, whether credentials and TLS settings are used)
    pytest.param("10.0.0.1:6443", "http://10.0.0.1:6443", False, id="ip-port"),
    pytest.param("kube.example.com:6443", "http://kube.example.com:6443", False, id="name-port"),
    pytest.param("kube.example.com", "http://kube.example.com", False, id="name"),
    pytest.param("localhost:8001", "http://localhost:8001", False, id="kubectl-proxy"),
    pytest.param("[fd00::1]:6443", "http://[fd00::1]:6443", False, id="ipv6-port"),
    pytest.param("https://kube.example.com:6443", "https://kube.example.com:6443", True, id="https-kept"),
    pytest.param("HTTPS://kube.example.com:6443", "https://kube.example.com:6443", True, id="scheme-any-case"),
    pytest.param("https://rancher.example.com/k8s/clusters/c-1/", "https://rancher.example.com/k8s/clusters/c-1",
                 True, id="https-with-path-prefix"),
]


@pytest.mark.parametrize(("written", "url", "secure"), READ)
def test_a_server_without_a_scheme_is_read_as_kubectl_reads_it(tmp_path, written, url, secure):
    config = load_kube_config(kubeconfig(tmp_path, written))
    assert config.server == url
    assert (config.token, config.ca_pem, config.tls_server_name) == \
        (("secret-token", CA, "kube") if secure else (None, None, None))
    assert config.impersonation == (("Impersonate-User", "jane"),)


REFUSED = [
    pytest.param("kube.example.com:6443/prefix", "host must be a URL or a host:port pair", id="path-without-scheme"),
    pytest.param("kube.example.com:http", "port", id="port-not-a-number"),
    pytest.param("ftp://kube.example.com", "only http and https", id="other-scheme"),
]


@pytest.mark.parametrize(("written", "message"), REFUSED)
def test_a_server_kubectl_cannot_use_is_refused_at_load(tmp_path, written, message):
    with pytest.raises(KubeConfigError, match=message):
        load_kube_config(kubeconfig(tmp_path, written))


@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_our_client_and_kubectl_send_the_same_to_a_server_without_a_scheme(tmp_path):
    async with api_server() as server:
        path = kubeconfig(tmp_path, f"127.0.0.1:{server.port}", ca=False)
        ours, theirs = await ours_and_kubectls(path, server)
    for seen in (ours, theirs):
        assert (seen.path, seen.header("Authorization"), seen.header("Impersonate-User")) == ("/api", None, "jane")
