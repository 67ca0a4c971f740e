"""Certificates shared by the server unit tests (ECDSA: fast to generate), and a runner on a free port."""

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import web
from cryptography.hazmat.primitives.serialization import Encoding

from kubecommon import tls
from kubecommon.tls import CertKeyPair


@dataclass(frozen=True)
class PKI:
    front_proxy_ca: CertKeyPair
    client_ca: CertKeyPair
    other_ca: CertKeyPair
    front_proxy: CertKeyPair  # CN front-proxy-client, from the front-proxy CA
    front_proxy_wrong_cn: CertKeyPair  # CN intruder, from the front-proxy CA
    alice: CertKeyPair  # CN alice, O dev+ops, from the client CA
    client_ca_as_proxy: CertKeyPair  # CN front-proxy-client but from the client CA
    stranger: CertKeyPair  # from a CA nobody trusts

    @staticmethod
    def der(pair: CertKeyPair) -> bytes:
        return pair.certificate.public_bytes(Encoding.DER)


@pytest.fixture(scope="session")
def pki() -> PKI:
    ecdsa = {"key_algorithm": "ecdsa"}
    fp_ca = tls.generate_ca("front-proxy-ca", **ecdsa)
    client_ca = tls.generate_ca("client-ca", **ecdsa)
    other_ca = tls.generate_ca("other-ca", **ecdsa)

    def client(ca, cn, orgs=()):
        return tls.issue_certificate(ca, cn, organizations=orgs, server=False, client=True, **ecdsa)

    return PKI(front_proxy_ca=fp_ca, client_ca=client_ca, other_ca=other_ca,
               front_proxy=client(fp_ca, "front-proxy-client"),
               front_proxy_wrong_cn=client(fp_ca, "intruder"),
               alice=client(client_ca, "alice", ("dev", "ops")),
               client_ca_as_proxy=client(client_ca, "front-proxy-client"),
               stranger=client(other_ca, "front-proxy-client"))


@contextlib.asynccontextmanager
async def serving(runner: web.AppRunner) -> AsyncIterator[int]:
    """`runner` (from `routes.make_runner`, the adapter's own server settings) listening on a free
    loopback port; yields the port."""
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()
