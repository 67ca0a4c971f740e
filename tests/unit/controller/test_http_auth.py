"""Who may read the controller's endpoints: the always-allowed paths flag, the review it sends, the
flags that choose HTTPS, and the guard's answers over the in-process API server (against the real
stand-in and kubectl-made RBAC in tests/integration/controller/test_run_smoke.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from controller.http_auth import DEFAULT_ALWAYS_ALLOW, AlwaysAllowPaths, EndpointGuard, access_review_spec
from controller.options import parse
from kubecommon.kube.identity import UserInfo
from kubecommon.kube.reviews import SubjectAccessReviewer, TokenReviewer
from kubecommon.kube.client import KubeClient
from tests.unit.kubecommon.kube.apiserver import FakeAPIServer, eventually


@pytest.mark.parametrize(("flag", "path", "allowed"), [
    (DEFAULT_ALWAYS_ALLOW, "/healthz", True),
    (DEFAULT_ALWAYS_ALLOW, "/readyz", True),
    (DEFAULT_ALWAYS_ALLOW, "/livez", True),
    (DEFAULT_ALWAYS_ALLOW, "/metrics", False),
    (DEFAULT_ALWAYS_ALLOW, "/healthz/extra", False),
    (DEFAULT_ALWAYS_ALLOW, "/debug/decisions/pas/a/b", False),
    ("/metrics, /debug/*", "/debug/decisions/pas/a/b", True),
    ("/metrics, /debug/*", "/metrics", True),
    ("/metrics, /debug/*", "/debugger", False),
    ("", "/healthz", False),
], ids=["healthz", "readyz", "livez", "metrics", "exact-only", "debug", "prefix", "listed", "prefix-is-a-dir", "none"])
def test_always_allowed_paths(flag: str, path: str, allowed: bool) -> None:
    assert AlwaysAllowPaths.parse(flag).allows(path) is allowed


@pytest.mark.parametrize(("flag", "message"), [
    ("healthz", "path 'healthz' must start with /"),
    ("/a/*/b", "path '/a/*/b': only a trailing * is allowed"),
], ids=["relative", "inner-star"])
def test_bad_always_allowed_paths_are_usage_errors(flag: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse([f"--authorization-always-allow-paths={flag}"])
    assert exit_info.value.code == 2
    assert f"--authorization-always-allow-paths: {message}" in capsys.readouterr().err


def test_the_review_asks_for_the_path_as_the_authenticated_user() -> None:
    user = UserInfo(name="system:serviceaccount:monitoring:prometheus", uid="u1",
                    groups=("system:serviceaccounts", "system:serviceaccounts:monitoring"))
    assert access_review_spec(user, "/metrics", "get") == {
        "user": "system:serviceaccount:monitoring:prometheus", "uid": "u1",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}


def test_the_port_is_secure_unless_told_otherwise(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse([]).metrics_secure is True
    assert parse(["--metrics-secure=false"]).metrics_secure is False
    given = parse(["--tls-cert-file=/c/tls.crt", "--tls-private-key-file=/c/tls.key"])
    assert (given.tls_cert_file, given.tls_private_key_file) == ("/c/tls.crt", "/c/tls.key")
    with pytest.raises(SystemExit):
        parse(["--tls-cert-file=/c/tls.crt"])
    assert "--tls-cert-file and --tls-private-key-file go together" in capsys.readouterr().err


@pytest.fixture
async def api() -> AsyncIterator[FakeAPIServer]:
    """The in-process API server answering TokenReviews and SubjectAccessReviews, with its client."""
    server = FakeAPIServer()
    server.client = KubeClient(await server.start(), timeout=2.0)
    await server.client.start()
    yield server
    await server.client.close()
    await server.close()


@pytest.fixture
async def guarded(api: FakeAPIServer) -> AsyncIterator[tuple[TestClient, asyncio.Event, list[int]]]:
    """The guard in front of a /metrics that waits for `release` (and counts the requests that got
    in), over the in-process API server."""
    release = asyncio.Event()
    release.set()
    entered = [0]

    async def metrics(_: web.Request) -> web.Response:
        entered[0] += 1
        await release.wait()
        return web.Response(text="ok")

    guard = EndpointGuard(TokenReviewer(api.client), SubjectAccessReviewer(api.client),
                          always_allow=AlwaysAllowPaths.parse(DEFAULT_ALWAYS_ALLOW), max_in_flight=2)
    app = web.Application(middlewares=[guard.middleware])
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", metrics)
    async with TestClient(TestServer(app)) as client:
        yield client, release, entered


@pytest.mark.parametrize(("token", "code", "reason"), [
    (None, 401, "Unauthorized"),
    ("made-up", 401, "Unauthorized"),
    ("stranger", 403, "Forbidden"),
    ("prometheus", 200, None),
], ids=["no-token", "unknown-token", "not-allowed", "allowed"])
async def test_the_guard_answers_as_the_api_server_decides(
        api: FakeAPIServer, guarded: tuple[TestClient, asyncio.Event, list[int]], token: str | None, code: int,
        reason: str | None) -> None:
    client, _, _ = guarded
    api.token_users.update(stranger={"username": "stranger"}, prometheus={"username": "prometheus"})
    api.sar_allowed_users.add("prometheus")
    resp = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
    assert resp.status == code
    if reason is not None:  # a Status body, written as kube-apiserver writes it
        assert (await resp.json())["reason"] == reason
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert (await client.get("/healthz")).status == 200, "probe paths need no token"


async def test_guarded_requests_beyond_the_limit_get_429(
        api: FakeAPIServer, guarded: tuple[TestClient, asyncio.Event, list[int]]) -> None:
    client, release, entered = guarded
    api.token_users["prometheus"] = {"username": "prometheus"}
    api.sar_allowed_users.add("prometheus")
    release.clear()
    headers = {"Authorization": "Bearer prometheus"}
    held = [asyncio.ensure_future(client.get("/metrics", headers=headers)) for _ in range(2)]
    await eventually(lambda: entered[0] == 2)  # both held requests are inside the handler
    refused = await client.get("/metrics", headers=headers)
    assert (refused.status, refused.headers["Retry-After"]) == (429, "1")
    release.set()
    assert [(await r).status for r in held] == [200, 200]
    assert (await client.get("/metrics", headers=headers)).status == 200
