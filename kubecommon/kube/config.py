"""Where and how to reach the Kubernetes API: a kubeconfig file or the in-cluster service account.

Job: read a kubeconfig (current or named context: server, CA, client certificate, token,
token file, basic auth, insecure-skip-tls-verify, tls-server-name) or the in-cluster
environment (`KUBERNETES_SERVICE_HOST/PORT`, the service-account token and CA) into a frozen
`KubeConfig`. Inline `*-data` certificates are written to a private temporary directory because
`ssl.SSLContext.load_cert_chain` only reads files.

Non-goals: exec/auth-provider plugins (rejected with a clear error), HTTP. Called once at startup.
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["KubeConfig", "KubeConfigError", "in_cluster_config", "load_kube_config"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeConfigError(ValueError):
    """The kubeconfig cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeConfig:
    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    client_cert_file: str | None = None
    client_key_file: str | None = None
    token: str | None = None
    token_file: str | None = None  # re-read periodically: bound tokens rotate
    username: str | None = None
    password: str | None = None
    tls_server_name: str | None = None
    source: str = ""


def _read(path: str, base: Path) -> bytes:
    full = Path(path) if os.path.isabs(path) else base / path
    return full.read_bytes()


def _materialise(data_b64: str, suffix: str, scratch: list[Path]) -> str:
    """Write base64 `*-data` to a 0600 file in a private directory; return its path."""
    if not scratch:
        scratch.append(Path(tempfile.mkdtemp(prefix="adapter-kubeconfig-")))
    fd, name = tempfile.mkstemp(dir=scratch[0], suffix=suffix)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64decode(data_b64))
    return name


def _named(items: Any, name: str, what: str, source: str) -> Mapping[str, Any]:
    for item in items or ():
        if isinstance(item, Mapping) and item.get("name") == name:
            return item.get(what) or {}
    raise KubeConfigError(f"{source}: no {what} named {name!r}")


def load_kube_config(path: str | Path, *, context: str | None = None) -> KubeConfig:
    """Parse a kubeconfig file (one file; KUBECONFIG lists are not merged)."""
    source = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise KubeConfigError(f"{source}: cannot read kubeconfig: {err}") from None
    if not isinstance(doc, Mapping):
        raise KubeConfigError(f"{source}: not a kubeconfig (expected a mapping)")
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise KubeConfigError(f"{source}: no current-context and no --context given")
    ctx = _named(doc.get("contexts"), ctx_name, "context", source)
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster", source)
    user = _named(doc.get("users"), ctx.get("user", ""), "user", source) if ctx.get("user") else {}
    if "exec" in user or "auth-provider" in user:
        raise KubeConfigError(f"{source}: user {ctx.get('user')!r} uses an exec/auth-provider "
                              "plugin, which is not supported; use a token, token file or client certificate")
    base = Path(path).resolve().parent
    scratch: list[Path] = []
    try:
        return _build(cluster, user, base, scratch, source)
    except (OSError, ValueError) as err:
        raise KubeConfigError(f"{source}: {err}") from None


def _build(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path,
           scratch: list[Path], source: str) -> KubeConfig:
    server = cluster.get("server")
    if not server:
        raise KubeConfigError(f"{source}: cluster has no server")
    ca_pem = None
    if cluster.get("certificate-authority-data"):
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
    elif cluster.get("certificate-authority"):
        ca_pem = _read(cluster["certificate-authority"], base)
    cert_file = key_file = None
    if user.get("client-certificate-data"):
        cert_file = _materialise(user["client-certificate-data"], ".crt", scratch)
    elif user.get("client-certificate"):
        cert_file = str(base / user["client-certificate"])
    if user.get("client-key-data"):
        key_file = _materialise(user["client-key-data"], ".key", scratch)
    elif user.get("client-key"):
        key_file = str(base / user["client-key"])
    token_file = user.get("tokenFile")
    return KubeConfig(
        server=str(server).rstrip("/"), ca_pem=ca_pem,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        client_cert_file=cert_file, client_key_file=key_file,
        token=user.get("token") or None,
        token_file=str(base / token_file) if token_file else None,
        username=user.get("username"), password=user.get("password"),
        tls_server_name=cluster.get("tls-server-name"), source=source,
    )


def in_cluster_config(env: Mapping[str, str], *, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> KubeConfig:
    """The service-account configuration a pod gets (same rules as client-go InClusterConfig)."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError("not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); "
                              "pass --kubeconfig")
    token_file = sa_dir / "token"
    if not token_file.exists():
        raise KubeConfigError(f"in-cluster: {token_file} does not exist")
    host = f"[{host}]" if ":" in host else host
    ca_file = sa_dir / "ca.crt"
    return KubeConfig(server=f"https://{host}:{port}",
                      ca_pem=ca_file.read_bytes() if ca_file.exists() else None,
                      token_file=str(token_file), source="in-cluster")
