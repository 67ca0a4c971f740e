"""A kubeconfig user with a bearer token (inline or a token file) and basic auth is refused at load,
as kubectl refuses it, whatever the server's scheme: which credential would be sent is not the
user's choice but an accident of the client. A client certificate goes with either."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
import yaml

from kubecommon.kube.config import KubeConfigError, load_kube_config

PEM = base64.b64encode(b"PEM").decode()
# user stanza -> what kubectl says (None: the file is valid)
CASES = [
    pytest.param({"token": "t", "username": "me", "password": "pw"},
                 "more than one authentication method found for u; found [token basicAuth], only one is allowed",
                 id="token and username/password"),
    pytest.param({"token": "t", "password": "pw"},
                 "more than one authentication method found for u; found [token basicAuth], only one is allowed",
                 id="token and password"),
    pytest.param({"tokenFile": "token", "username": "me"}, "username/password or bearer token may be set, but not both",
                 id="token file and username"),
    pytest.param({"token": "t", "client-certificate-data": PEM, "client-key-data": PEM}, None,
                 id="token and client certificate"),
    pytest.param({"username": "me", "password": "pw", "client-certificate-data": PEM, "client-key-data": PEM}, None,
                 id="basic auth and client certificate"),
]


def kubeconfig(tmp_path: Path, user: dict, server: str) -> Path:
    (tmp_path / "token").write_text("file-token")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x"}))
    return path


@pytest.mark.parametrize("server", ["https://127.0.0.1:1", "http://127.0.0.1:1"])
@pytest.mark.parametrize(("user", "refusal"), CASES)
def test_a_token_with_basic_auth_is_refused_at_load(tmp_path, user, refusal, server):
    path = kubeconfig(tmp_path, user, server)
    if refusal is None:
        load_kube_config(path)
        return
    with pytest.raises(KubeConfigError, match=refusal.replace("[", r"\[").replace("]", r"\]")):
        load_kube_config(path)


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("user", "refusal"), CASES)
async def test_kubectl_says_the_same(tmp_path, user, refusal):
    path = kubeconfig(tmp_path, user, "https://127.0.0.1:1")
    kubectl = await asyncio.create_subprocess_exec(
        "kubectl", f"--kubeconfig={path}", "get", "--raw", "/api", "--request-timeout=2s",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(kubectl.communicate(), 30)
    assert kubectl.returncode != 0  # nothing listens on port 1
    if refusal is None:
        assert "authentication method" not in err.decode() and "but not both" not in err.decode(), err.decode()
    else:
        assert refusal in err.decode()
