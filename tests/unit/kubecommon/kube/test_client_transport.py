"""How the kube client reaches and authenticates to the API server, as kubectl does: through the
cluster's `proxy-url`, with the current token of a rotating token file, and with a fresh exec
credential after a watch was answered 401.

Real servers throughout: the in-process API server (bearer token "t0ken", over HTTPS where a
kubeconfig user authenticates: credentials go only over https, as with kubectl), a CONNECT proxy on a
local socket, the HTTPS stand-in and kubectl itself."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
import yaml

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfigError, load_kube_config
from kubecommon.kube.errors import KubeAPIError
from tests.fixtures.relay import relay

from .test_exec_kubeconfig import exec_kubeconfig, trusting


class ConnectProxy:
    """An HTTP proxy that only tunnels (CONNECT), remembering each target it was asked for."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._tunnel, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        self.targets.append(target)
        host, port = target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await relay((reader, writer), (up_reader, up_writer))




@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_the_clusters_proxy_url_carries_our_requests_as_it_carries_kubectls(kube_standin, tmp_path):
    proxy = ConnectProxy()
    await proxy.start()
    try:
        doc = yaml.safe_load(kube_standin.kubeconfig.read_text())
        doc["current-context"] = "standin"
        for cluster in doc["clusters"]:
            cluster["cluster"]["proxy-url"] = proxy.url
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", f"--kubeconfig={path}", "get", "namespace", "default", "-o", "name",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(kubectl.communicate(), 30)
        assert out.decode().strip() == "namespace/default", err.decode()
        server_address = f"127.0.0.1:{kube_standin.port}"
        assert set(proxy.targets) == {server_address}
        proxy.targets.clear()
        client = KubeClient(load_kube_config(path), timeout=10.0)
        await client.start()
        try:
            assert (await client.get("/api/v1/namespaces/default"))["metadata"]["name"] == "default"
        finally:
            await client.close()
        assert proxy.targets == [server_address]
    finally:
        await proxy.close()


@pytest.mark.parametrize("proxy_url, message", [
    pytest.param("socks5://127.0.0.1:1080", "proxy-url socks5://127.0.0.1:1080: only http and https proxies",
                 id="socks5"),
    pytest.param("127.0.0.1:3128", "proxy-url 127.0.0.1:3128: only http and https proxies", id="no-scheme"),
])
def test_a_proxy_url_we_cannot_use_is_refused_at_load(tmp_path, proxy_url, message):
    doc = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c"}}],
           "clusters": [{"name": "c", "cluster": {"server": "https://x:6443", "proxy-url": proxy_url}}]}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(doc))
    with pytest.raises(KubeConfigError, match=message):
        load_kube_config(tmp_path / "kubeconfig")




@pytest.mark.parametrize("rotated_to, answered", [
    pytest.param("t0ken", "settings", id="the rotated token is used after a minute"),
    pytest.param("", "settings", id="an emptied file keeps the previous token, as client-go does"),
    pytest.param("other", 401, id="a rotated token the server refuses is sent"),
])
async def test_a_token_file_is_reread_as_it_rotates(server, tmp_path, rotated_to, answered):
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    now = [1000.0]
    config = dataclasses.replace(await server.start(), token=None, token_file=str(token))
    client = KubeClient(config, timeout=2.0, clock=lambda: now[0])
    await client.start()
    try:
        assert (await client.get("/api/v1/namespaces/default/configmaps/settings"))["metadata"]["name"] == "settings"
        token.write_text(rotated_to)
        now[0] += 61
        try:
            result = (await client.get("/api/v1/namespaces/default/configmaps/settings"))["metadata"]["name"]
        except KubeAPIError as err:
            result = err.status.code
        assert result == answered
    finally:
        await client.close()


@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_a_watch_answered_401_gets_a_fresh_exec_credential_next_time(https_server, tmp_path):
    """client-go re-runs the plugin on any 401; a watch that keeps being refused must not keep
    presenting the refused token."""
    path = exec_kubeconfig(tmp_path, https_server.url, mode="bad-then-good", TOKEN="t0ken",
                           cluster=trusting(https_server))
    client = KubeClient(load_kube_config(path), timeout=2.0)
    await client.start()
    try:
        with pytest.raises(KubeAPIError):
            async for _ in client.watch("/api/v1/configmaps", {"resourceVersion": "0"}, read_timeout=1.0):
                pass
        watch = client.watch("/api/v1/configmaps", {"resourceVersion": "0", "timeoutSeconds": "1"},
                             read_timeout=1.0)
        first = await asyncio.wait_for(watch.__anext__(), 5)
        await watch.aclose()
        assert first["object"]["metadata"]["name"] == "settings"
    finally:
        await client.close()
    assert (tmp_path / "runs").read_text().split() == ["client.authentication.k8s.io/v1"] * 2




async def _whoami(config) -> tuple[str, list[str]]:
    client = KubeClient(config, timeout=10.0)
    await client.start()
    try:
        review = await client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                   {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    finally:
        await client.close()
    info = review["status"]["userInfo"]
    return info["username"], sorted(info.get("groups") or [])


@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_a_kubeconfig_user_that_impersonates_is_who_kubectl_is(kube_standin, tmp_path):
    """`as` / `as-groups` in the kubeconfig user: kubectl acts as that identity, so must we."""
    doc = yaml.safe_load(kube_standin.kubeconfig.read_text())
    doc["current-context"] = "standin"
    admin = next(c["context"]["user"] for c in doc["contexts"] if c["name"] == "standin")
    for user in doc["users"]:
        if user["name"] == admin:
            user["user"].update({"as": "jane", "as-groups": ["team-a", "team-b"]})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    whoami = kube_standin.kubectl("auth", "whoami", "-o", "json", kubeconfig=path)
    import json
    expected = json.loads(whoami.stdout)["status"]["userInfo"]
    assert expected["username"] == "jane"
    assert await _whoami(load_kube_config(path)) == ("jane", sorted(expected.get("groups") or []))
