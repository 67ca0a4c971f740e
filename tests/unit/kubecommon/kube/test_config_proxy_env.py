"""The proxy environment, read as kubectl reads it (Go's http.ProxyFromEnvironment, which client-go
uses when the cluster has no proxy-url): HTTPS_PROXY for an https server, HTTP_PROXY for an http
one (upper-case name first), never for localhost or a loopback address, and NO_PROXY matched by
host, .domain, *.domain, IP, CIDR, `*` and :port. The cluster's proxy-url wins over all of it.

The rules are pinned on `proxy_from_environment`; `load_kube_config` and `in_cluster_config` are
shown to apply them, and a real request is shown to travel through the proxy the environment
names (a local forwarding proxy that reaches a server whose name only it can resolve)."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfigError, in_cluster_config, load_kube_config
from kubecommon.kube.errors import KubeUnavailable
from kubecommon.kube.proxy_env import proxy_from_environment
from tests.fixtures.relay import relay

PROXY = "http://proxy.corp:3128"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                   "REQUEST_METHOD")

CHOSEN = [  # (server, environment, the proxy chosen)
    pytest.param("https://api.example.com", {"HTTPS_PROXY": PROXY}, PROXY, id="https-server-https-proxy"),
    pytest.param("https://api.example.com", {"HTTP_PROXY": PROXY}, None, id="https-server-ignores-http-proxy"),
    pytest.param("http://api.example.com", {"HTTP_PROXY": PROXY}, PROXY, id="http-server-http-proxy"),
    pytest.param("http://api.example.com", {"HTTPS_PROXY": PROXY}, None, id="http-server-ignores-https-proxy"),
    pytest.param("https://api.example.com", {"https_proxy": PROXY}, PROXY, id="lower-case-name"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": PROXY, "https_proxy": "http://other:1"}, PROXY,
                 id="upper-case-wins"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": "", "https_proxy": PROXY}, PROXY,
                 id="empty-upper-case-falls-to-lower"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": "proxy.corp:3128"}, PROXY, id="no-scheme-is-http"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": "10.0.0.9:3128"}, "http://10.0.0.9:3128",
                 id="ip-without-scheme-is-http"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": "https://proxy.corp"}, "https://proxy.corp",
                 id="https-proxy-kept"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": "http://u:p@proxy.corp:3128"},
                 "http://u:p@proxy.corp:3128", id="proxy-credentials-kept"),
    pytest.param("https://localhost:6443", {"HTTPS_PROXY": PROXY}, None, id="localhost-never"),
    pytest.param("https://127.0.0.1:6443", {"HTTPS_PROXY": PROXY}, None, id="loopback-never"),
    pytest.param("https://127.9.9.9", {"HTTPS_PROXY": PROXY}, None, id="all-of-127/8-is-loopback"),
    pytest.param("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, None, id="ipv6-loopback-never"),
    pytest.param("https://10.96.0.1:443", {"HTTPS_PROXY": PROXY}, PROXY, id="service-ip-without-no-proxy"),
]


@pytest.mark.parametrize(("server", "env", "proxy"), CHOSEN)
def test_the_proxy_variable_is_chosen_by_the_servers_scheme(server, env, proxy):
    found = proxy_from_environment(server, env)
    assert (found.url if found else None) == proxy


BYPASSED = [  # (server, NO_PROXY, whether the proxy is bypassed)
    pytest.param("https://api.example.com", "*", True, id="star"),
    pytest.param("https://api.example.com", "other.org,*", True, id="star-anywhere-in-the-list"),
    pytest.param("https://example.com", "example.com", True, id="domain-itself"),
    pytest.param("https://api.example.com", "example.com", True, id="domain-covers-subdomains"),
    pytest.param("https://notexample.com", "example.com", False, id="domain-is-not-a-suffix-match"),
    pytest.param("https://api.example.com", ".example.com", True, id="dot-domain-subdomain"),
    pytest.param("https://example.com", ".example.com", False, id="dot-domain-not-itself"),
    pytest.param("https://api.example.com", "*.example.com", True, id="star-dot-domain-subdomain"),
    pytest.param("https://example.com", "*.example.com", False, id="star-dot-domain-not-itself"),
    pytest.param("https://API.Example.COM", " Example.com ,", True, id="case-and-spaces-ignored"),
    pytest.param("https://api.example.com:6443", "example.com:6443", True, id="domain-port-matches"),
    pytest.param("https://api.example.com:6443", "example.com:443", False, id="domain-other-port"),
    pytest.param("https://api.example.com", "example.com:443", True, id="https-default-port-443"),
    pytest.param("http://api.example.com", "example.com:80", True, id="http-default-port-80"),
    pytest.param("https://10.1.2.3:6443", "10.1.2.3", True, id="ip"),
    pytest.param("https://10.1.2.3:6443", "10.1.2.4", False, id="other-ip"),
    pytest.param("https://10.1.2.3:6443", "10.1.2.3:6443", True, id="ip-port"),
    pytest.param("https://10.1.2.3:6443", "10.1.2.3:443", False, id="ip-other-port"),
    pytest.param("https://10.96.0.1", "10.96.0.0/12", True, id="cidr"),
    pytest.param("https://10.112.0.1", "10.96.0.0/12", False, id="outside-cidr"),
    pytest.param("https://[fd00::1]:6443", "fd00::/8", True, id="ipv6-cidr"),
    pytest.param("https://[fd00::1]:6443", "[fd00::1]:6443", True, id="ipv6-port"),
    pytest.param("https://[fd00::1]:6443", "fd00::1", True, id="ipv6"),
    pytest.param("https://api.example.com", ":443", False, id="port-without-host-ignored"),
    pytest.param("https://api.example.com", "", False, id="empty"),
]


@pytest.mark.parametrize(("server", "no_proxy", "bypassed"), BYPASSED)
def test_no_proxy_is_matched_as_go_matches_it(server, no_proxy, bypassed):
    for name in ("NO_PROXY", "no_proxy"):
        assert (proxy_from_environment(server, {"HTTPS_PROXY": PROXY, "HTTP_PROXY": PROXY, name: no_proxy})
                is None) == bypassed


def kubeconfig(tmp_path, server: str, **cluster: str):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x"}))
    return path


@pytest.fixture
def environment(monkeypatch):
    """The process environment with no proxy variable; the test sets the ones it needs."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


LOADED = [  # (cluster's proxy-url or None, environment, the proxy the config carries)
    pytest.param(None, {"HTTPS_PROXY": PROXY}, PROXY, id="environment"),
    pytest.param(None, {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, None, id="no-proxy"),
    pytest.param("http://cluster-proxy:8080", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*"},
                 "http://cluster-proxy:8080", id="proxy-url-wins-over-everything"),
    pytest.param(None, {}, None, id="none"),
]


@pytest.mark.parametrize(("proxy_url", "env", "proxy"), LOADED)
def test_a_kubeconfig_without_proxy_url_takes_the_environments_proxy(tmp_path, environment, proxy_url, env, proxy):
    for name, value in env.items():
        environment.setenv(name, value)
    extra = {"proxy-url": proxy_url} if proxy_url else {}
    assert load_kube_config(kubeconfig(tmp_path, "https://api.example.com:6443", **extra)).proxy_url == proxy


def test_a_socks5_proxy_in_the_environment_is_refused_by_name(tmp_path, environment):
    environment.setenv("https_proxy", "socks5://proxy.corp:1080")
    with pytest.raises(KubeConfigError, match=r"https_proxy.*socks5://proxy.corp:1080.*NO_PROXY"):
        load_kube_config(kubeconfig(tmp_path, "https://api.example.com:6443"))


@pytest.mark.parametrize(("env", "proxy"), [
    pytest.param({"HTTPS_PROXY": PROXY}, PROXY, id="proxied"),
    pytest.param({"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.0/12"}, None, id="service-cidr-in-no-proxy"),
])
def test_in_cluster_the_pods_proxy_environment_applies_as_in_client_go(tmp_path, env, proxy):
    (tmp_path / "token").write_text("t")
    config = in_cluster_config({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", **env},
                               sa_dir=tmp_path)
    assert config.proxy_url == proxy


class ForwardingProxy:
    """A plain HTTP proxy that reaches every host it is asked for at 127.0.0.1 (so a made-up name
    works only through it), remembering the first request line of each connection."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ForwardingProxy:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n", 1)[0].decode()
        self.requests.append(line)
        port = int(line.split(" ")[1].split("/")[2].rsplit(":", 1)[1])  # GET http://host:port/path HTTP/1.1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        up_writer.write(head)
        await relay((reader, writer), (up_reader, up_writer))




async def test_a_request_travels_through_the_proxy_the_environment_names(tmp_path, environment, server):
    server.anonymous = True  # a plain-http server gets no credentials (as from kubectl): it serves anonymous
    port = server.url.rsplit(":", 1)[1]
    path = kubeconfig(tmp_path, f"http://kube-api.invalid:{port}")
    async with ForwardingProxy() as proxy:
        environment.setenv("HTTP_PROXY", proxy.url)
        client = KubeClient(load_kube_config(path), timeout=1.5)
        await client.start()
        try:
            answer = await client.get("/api/v1/namespaces/default/configmaps/settings")
        finally:
            await client.close()
    assert answer["metadata"]["name"] == "settings"
    assert proxy.requests[0].startswith(f"GET http://kube-api.invalid:{port}/api/v1/namespaces/default/")


async def test_a_server_in_no_proxy_is_reached_directly(tmp_path, environment, server):
    port = server.url.rsplit(":", 1)[1]
    async with ForwardingProxy() as proxy:
        environment.setenv("HTTP_PROXY", proxy.url)
        environment.setenv("NO_PROXY", ".invalid")
        client = KubeClient(load_kube_config(kubeconfig(tmp_path, f"http://kube-api.invalid:{port}")), timeout=1.5)
        await client.start()
        try:
            with pytest.raises(KubeUnavailable):  # the made-up name resolves nowhere but in the proxy
                await client.get("/api/v1/namespaces/default/configmaps/settings")
        finally:
            await client.close()
    assert proxy.requests == []


@pytest.mark.parametrize("where", ["environment", "proxy-url"])
def test_a_proxy_password_stays_out_of_the_configs_repr(tmp_path, environment, where):
    proxy = "http://svc-kube:hunter2@proxy.corp:3128"
    if where == "environment":
        environment.setenv("HTTPS_PROXY", proxy)
        config = load_kube_config(kubeconfig(tmp_path, "https://api.example.com:6443"))
    else:
        config = load_kube_config(kubeconfig(tmp_path, "https://api.example.com:6443", **{"proxy-url": proxy}))
    assert config.proxy_url == proxy  # the client still authenticates to the proxy
    assert "hunter2" not in repr(config)
    assert "svc-kube:***@proxy.corp:3128" in repr(config)  # a log line still says which proxy
