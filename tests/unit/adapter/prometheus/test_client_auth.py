"""PrometheusClient credentials on the wire: bearer token file (and its rotation), basic auth,
extra headers (multi-tenant `X-Scope-OrgID`), CA bundle and client certificate over real TLS."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from adapter.prometheus import errors
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.settings import PrometheusSettings
from kubecommon.tls import CertKeyPair, generate_ca, issue_certificate, server_ssl_context
from tests.fixtures.prom_http import FakePromHTTP


@pytest.fixture
async def server() -> AsyncIterator[FakePromHTTP]:
    srv = await FakePromHTTP().start()
    yield srv
    await srv.stop()


async def test_bearer_token_file_is_sent_and_reread_after_rotation(
    server: FakePromHTTP, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")  # service-account files end with a newline
    settings = PrometheusSettings(url=server.url, token_file=str(token))
    async with PrometheusClient(settings) as client:
        await client.query("up")  # type: ignore[arg-type]
        token.write_text("second-token-rotated\n")
        os.utime(token, ns=(1, 2_000_000_000_000_000_000))  # a different mtime, surely
        await client.series(["up"], start=0, end=1)
    assert [r.headers["Authorization"] for r in server.requests] == [
        "Bearer first-token", "Bearer second-token-rotated"]


async def test_missing_token_file_fails_at_start(tmp_path: Path) -> None:
    settings = PrometheusSettings(url="http://127.0.0.1:1", token_file=str(tmp_path / "nope"))
    client = PrometheusClient(settings)
    with pytest.raises(errors.PrometheusError, match="cannot read credential file"):
        await client.start()
    await client.close()


async def test_basic_auth_from_password_file(server: FakePromHTTP, tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("s3cret\n")
    settings = PrometheusSettings(url=server.url, basic_auth_username="adapter",
                                  basic_auth_password_file=str(password))
    async with PrometheusClient(settings) as client:
        await client.query("up")  # type: ignore[arg-type]
    assert server.requests[0].headers["Authorization"] == "Basic YWRhcHRlcjpzM2NyZXQ="


async def test_extra_headers_on_every_request(server: FakePromHTTP) -> None:
    settings = PrometheusSettings(url=server.url, headers=(("X-Scope-OrgID", "tenant-a"),
                                                           ("X-Extra", "")))
    async with PrometheusClient(settings) as client:
        await client.query("up")  # type: ignore[arg-type]
        await client.series(["up"], start=0, end=1)
    for req in server.requests:
        assert req.headers["X-Scope-OrgID"] == "tenant-a"
        assert req.headers["X-Extra"] == ""
        assert "Authorization" not in req.headers


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("pki")
    ca = generate_ca("test-prometheus-ca", key_algorithm="ecdsa")
    server = issue_certificate(ca, "prometheus", ip_addresses=("127.0.0.1",),
                               key_algorithm="ecdsa")
    client = issue_certificate(ca, "prom-autoscaler-adapter", server=False, client=True,
                               key_algorithm="ecdsa")
    paths = {name: base / name for name in ("ca.crt", "server.crt", "server.key", "client.crt",
                                             "client.key")}
    paths["ca.crt"].write_bytes(ca.cert_pem)
    pairs: dict[str, CertKeyPair] = {"server": server, "client": client}
    for name, pair in pairs.items():
        pair.write(paths[f"{name}.crt"], paths[f"{name}.key"])
    return paths


@pytest.fixture
async def tls_server(pki: dict[str, Path]) -> AsyncIterator[FakePromHTTP]:
    context = server_ssl_context(pki["server.crt"], pki["server.key"],
                                 client_ca_pem=pki["ca.crt"].read_bytes())
    srv = await FakePromHTTP().start(ssl_context=context)
    yield srv
    await srv.stop()


async def test_tls_with_ca_file_and_client_certificate(
    tls_server: FakePromHTTP, pki: dict[str, Path]
) -> None:
    settings = PrometheusSettings(url=tls_server.url, ca_file=str(pki["ca.crt"]),
                                  client_cert_file=str(pki["client.crt"]),
                                  client_key_file=str(pki["client.key"]))
    async with PrometheusClient(settings) as client:
        assert len(await client.query("up")) == 1  # type: ignore[arg-type]
    assert tls_server.requests[0].peer_cn == "prom-autoscaler-adapter"


async def test_tls_without_our_ca_is_rejected(tls_server: FakePromHTTP) -> None:
    async with PrometheusClient(PrometheusSettings(url=tls_server.url)) as client:
        with pytest.raises(errors.PrometheusUnreachable, match="(?i)certificate"):
            await client.query("up")  # type: ignore[arg-type]
    assert tls_server.requests == []


@pytest.mark.parametrize("which", [
    pytest.param("ca", id="CA file that is not a certificate"),
    pytest.param("cert", id="client certificate file missing"),
])
async def test_bad_tls_files_fail_at_start(pki: dict[str, Path], tmp_path: Path,
                                           which: str) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    settings = PrometheusSettings(
        url="https://127.0.0.1:1",
        ca_file=str(garbage if which == "ca" else pki["ca.crt"]),
        client_cert_file=str(tmp_path / "missing.crt" if which == "cert" else pki["client.crt"]),
        client_key_file=str(pki["client.key"]))
    client = PrometheusClient(settings)
    with pytest.raises(errors.PrometheusError, match="--prometheus-ca-file"):
        await client.start()
    await client.close()


@pytest.mark.parametrize("path", ["series", "query"])
async def test_a_redirect_to_another_origin_carries_no_credentials_or_configured_headers(
    server: FakePromHTTP, tmp_path: Path, path: str
) -> None:
    """A proxy (or a compromised backend) pointing elsewhere learns neither the token nor the
    tenant header nor any --prometheus-header; a redirect within the origin keeps them all."""
    from aiohttp import web

    from tests.fixtures.prom_http import Recorded

    elsewhere = await FakePromHTTP().start()
    try:
        async def handler(req: Recorded) -> web.StreamResponse:
            query = "" if req.method == "POST" else "?" + urlencode(list(req.params.items()))
            if req.path.startswith("/moved/"):  # within the origin, then to another one
                raise web.HTTPTemporaryRedirect(elsewhere.url + req.path.removeprefix("/moved") + query)
            raise web.HTTPTemporaryRedirect("/moved" + req.path + query)

        server.handler = handler
        token = tmp_path / "token"
        token.write_text("secret-token\n")
        settings = PrometheusSettings(url=server.url, token_file=str(token),
                                      headers=(("X-Scope-OrgID", "tenant-a"), ("X-Api-Key", "k")))
        async with PrometheusClient(settings) as client:
            if path == "series":
                assert await client.series(["up"], start=0, end=1) == [{"__name__": "up", "job": "x"}]
            else:
                assert [s.value for s in await client.query("up + 0")] == [1.0]  # type: ignore[arg-type]
        same_origin = [r for r in server.requests if r.path.startswith("/moved/")]
        assert same_origin, "the redirect within the origin was followed"
        for req in same_origin:
            assert (req.headers["Authorization"], req.headers["X-Scope-OrgID"], req.headers["X-Api-Key"]) == (
                "Bearer secret-token", "tenant-a", "k")
        assert elsewhere.requests
        for req in elsewhere.requests:
            assert {"Authorization", "X-Scope-OrgID", "X-Api-Key"}.isdisjoint(req.headers)
            assert req.params.get("match[]" if path == "series" else "query") == ("up" if path == "series" else "up + 0")
    finally:
        await elsewhere.stop()
