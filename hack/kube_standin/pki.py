"""Certificates and the kubeconfig of one stand-in instance.

Like a kubeadm control plane it has two CAs: the cluster CA (serving certificate, client
certificates; it is also the `client-ca-file`) and the front-proxy CA whose `front-proxy-client`
certificate the aggregation proxy presents to extension API servers. Keys are ECDSA P-256 so a
start stays well under a second. The kubeconfig has an admin token user and a client-certificate
user, one context each. Non-goals: certificate rotation.
"""

from __future__ import annotations

import base64
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubecommon import tls

from .kubeconfig import kubeconfig as kubeconfig_doc, write_kubeconfig as write_kubeconfig_file

FRONT_PROXY_CLIENT = "front-proxy-client"
CERT_USER = "standin-user"
CERT_USER_GROUPS = ("standin:developers",)
ADMIN_USER = "kubernetes-admin"
CONTEXT_ADMIN = "standin"
CONTEXT_CERT = "standin-cert"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pki:
    directory: Path
    ca: tls.CertKeyPair
    front_proxy_ca: tls.CertKeyPair
    serving: tls.CertKeyPair
    front_proxy_client: tls.CertKeyPair
    cert_user: tls.CertKeyPair
    admin_token: str

    def path(self, name: str) -> Path:
        return self.directory / name


_FILES = ("ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "apiserver.crt",
          "apiserver.key", "front-proxy-client.crt", "front-proxy-client.key", "user.crt",
          "user.key", "admin.token")


def load_or_create(directory: Path) -> Pki:
    """Reuse the certificates of a previous run in `directory` (like kube-apiserver's
    --cert-dir), so restarts keep kubeconfigs, caBundles and front-proxy trust valid."""
    if all((directory / name).exists() for name in _FILES):
        def pair(stem: str) -> tls.CertKeyPair:
            return tls.CertKeyPair((directory / f"{stem}.crt").read_bytes(),
                                   (directory / f"{stem}.key").read_bytes())
        return Pki(directory=directory, ca=pair("ca"), front_proxy_ca=pair("front-proxy-ca"),
                   serving=pair("apiserver"), front_proxy_client=pair("front-proxy-client"),
                   cert_user=pair("user"),
                   admin_token=(directory / "admin.token").read_text().strip())
    return create(directory)


def create(directory: Path, *, admin_token: str | None = None) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = tls.generate_ca("standin-ca", key_algorithm="ecdsa")
    fp_ca = tls.generate_ca("front-proxy-ca", key_algorithm="ecdsa")
    pki = Pki(
        directory=directory, ca=ca, front_proxy_ca=fp_ca,
        serving=tls.issue_certificate(
            ca, "kube-apiserver", dns_names=("localhost", "kubernetes", "kubernetes.default",
                                             "kubernetes.default.svc"),
            ip_addresses=("127.0.0.1",), server=True, key_algorithm="ecdsa"),
        front_proxy_client=tls.issue_certificate(fp_ca, FRONT_PROXY_CLIENT, server=False,
                                                 client=True, key_algorithm="ecdsa"),
        cert_user=tls.issue_certificate(ca, CERT_USER, organizations=CERT_USER_GROUPS,
                                        server=False, client=True, key_algorithm="ecdsa"),
        admin_token=admin_token or secrets.token_hex(24),
    )
    ca.write(pki.path("ca.crt"), pki.path("ca.key"))
    fp_ca.write(pki.path("front-proxy-ca.crt"), pki.path("front-proxy-ca.key"))
    pki.serving.write(pki.path("apiserver.crt"), pki.path("apiserver.key"))
    pki.front_proxy_client.write(pki.path("front-proxy-client.crt"),
                                 pki.path("front-proxy-client.key"))
    pki.cert_user.write(pki.path("user.crt"), pki.path("user.key"))
    token_file = pki.path("admin.token")
    token_file.write_text(pki.admin_token)
    token_file.chmod(0o600)
    return pki


def kubeconfig(pki: Pki, server: str, *, current: str = CONTEXT_ADMIN) -> dict[str, Any]:
    """The admin token user and the client-certificate user, one context each (namespace default)."""
    cert_user = {"client-certificate-data": base64.b64encode(pki.cert_user.cert_pem).decode(),
                 "client-key-data": base64.b64encode(pki.cert_user.key_pem).decode()}
    return kubeconfig_doc(server, {"admin": {"token": pki.admin_token}, "cert-user": cert_user},
                          ca_pem=pki.ca.cert_pem, contexts={CONTEXT_ADMIN: "admin", CONTEXT_CERT: "cert-user"},
                          current=current, namespace="default")


def write_kubeconfig(pki: Pki, server: str, path: Path) -> None:
    write_kubeconfig_file(path, kubeconfig(pki, server))


def loopback_serving_context() -> tuple[ssl.SSLContext, bytes]:
    """A TLS context serving 127.0.0.1 and the PEM of the fresh CA that signed it (P-256: quick)."""
    ca = tls.generate_ca("inprocess-apiserver-ca", key_algorithm="ecdsa")
    leaf = tls.issue_certificate(ca, "127.0.0.1", ip_addresses=["127.0.0.1"], key_algorithm="ecdsa")
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        leaf.write(cert, key)
        return tls.server_ssl_context(cert, key), ca.cert_pem
