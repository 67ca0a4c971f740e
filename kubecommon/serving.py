"""TLS serving material: the serving certificate (given or self-signed) and client CAs, reloadable.

Job: build the `ssl.SSLContext` aiohttp listens with, so that
- the serving certificate comes from `--tls-cert-file`/`--tls-private-key-file`, or is generated
  once into `--cert-dir` (`apiserver.crt`/`apiserver.key`, CA appended to the leaf) with SANs for
  the Service DNS names, localhost and 127.0.0.1, as k8s.io/apiserver does;
- certificate/key files changed on disk are picked up without a restart (polled; applied to new
  handshakes only, a broken pair is logged and the previous one kept);
- the handshake REQUESTS (does not require) a client certificate verified against the union of
  the requestheader CA and the client CA (spec §1.2), and new CAs apply to new handshakes.

How: the listening context's `sni_callback` (called for every handshake, with or without SNI)
swaps in the newest context built from the current files and CAs. The SSL object keeps the
listening context's verify mode, so the listener always requests client certificates.

Non-goals: TLS cipher configuration beyond the minimum version, SNI-specific certificates.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kubecommon import tls

__all__ = ["CertFiles", "DynamicServingContext", "ensure_self_signed", "service_dns_names"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CertFiles:
    cert_file: Path
    key_file: Path
    generated: bool = False


def service_dns_names(name: str | None, namespace: str | None) -> tuple[str, ...]:
    """`<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc` (the one kube-aggregator checks), `.cluster.local`."""
    if not name:
        return ()
    if not namespace:
        return (name,)
    return (name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local")


def ensure_self_signed(cert_dir: Path, *, dns_names: Sequence[str] = (),
                       ip_addresses: Sequence[str] = (), key_algorithm: str = "rsa") -> CertFiles:
    """Reuse `<cert-dir>/apiserver.{crt,key}` or generate them (CA + serving cert, 1 year)."""
    cert_file, key_file = cert_dir / "apiserver.crt", cert_dir / "apiserver.key"
    if cert_file.exists() and key_file.exists():
        return CertFiles(cert_file=cert_file, key_file=key_file, generated=False)
    cert_dir.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname() or "localhost"
    stamp = int(time.time())
    ca = tls.generate_ca(f"{host}-ca@{stamp}", days=365, key_algorithm=key_algorithm)
    names = tuple(dict.fromkeys((*dns_names, "localhost")))
    ips = tuple(dict.fromkeys((*ip_addresses, "127.0.0.1")))
    leaf = tls.issue_certificate(ca, f"{host}@{stamp}", dns_names=names, ip_addresses=ips,
                                 server=True, client=False, days=365, key_algorithm=key_algorithm)
    tmp_cert, tmp_key = cert_file.with_suffix(".crt.tmp"), key_file.with_suffix(".key.tmp")
    tmp_cert.write_bytes(leaf.cert_pem + ca.cert_pem)
    fd = os.open(tmp_key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(leaf.key_pem)
    os.replace(tmp_key, key_file)
    os.replace(tmp_cert, cert_file)
    _log.info("generated self-signed serving certificate %s (SANs: %s, %s)", cert_file,
              ", ".join(names), ", ".join(ips))
    return CertFiles(cert_file=cert_file, key_file=key_file, generated=True)


def _signature(paths: Sequence[Path]) -> tuple[tuple[int, int, int], ...]:
    result = []
    for path in paths:
        try:
            st = path.stat()
            result.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            result.append((-1, -1, -1))
    return tuple(result)


class DynamicServingContext:
    """The listener's SSL context plus the machinery to swap certificates and CAs under it."""

    def __init__(self, files: CertFiles, *, min_version: str = "VersionTLS12",
                 request_client_certs: bool = True) -> None:
        self._files = files
        self._min_version = min_version
        self._request_client_certs = request_client_certs
        self._client_ca_pem: bytes = b""
        self._signature = _signature((files.cert_file, files.key_file))
        self._current = self._build()  # raises on a broken pair: fail at start, not later
        self.listener = self._build()
        self.listener.sni_callback = self._on_hello

    def _build(self) -> ssl.SSLContext:
        ctx = tls.server_ssl_context(self._files.cert_file, self._files.key_file,
                                     client_ca_pem=self._client_ca_pem or None,
                                     min_version=self._min_version)
        if self._request_client_certs:
            # Request a certificate even before any CA is known, so that the listener's verify
            # mode (which the swapped context cannot change) always asks for one.
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    def _on_hello(self, ssl_object: ssl.SSLObject, server_name: str | None,
                  _ctx: ssl.SSLContext) -> None:
        ssl_object.context = self._current

    def set_client_ca(self, pem: bytes) -> None:
        """Trust these CAs (requestheader + client CA bundle) for client certificates."""
        if pem == self._client_ca_pem:
            return
        previous = self._client_ca_pem
        self._client_ca_pem = pem
        try:
            self._current = self._build()
        except (ssl.SSLError, OSError, ValueError) as err:
            self._client_ca_pem = previous
            _log.error("client CA bundle rejected, keeping the previous one: %s", err)

    def reload_if_changed(self) -> bool:
        """Rebuild from disk when the certificate or key file changed; True if swapped."""
        signature = _signature((self._files.cert_file, self._files.key_file))
        if signature == self._signature:
            return False
        try:
            fresh = self._build()
        except (ssl.SSLError, OSError, ValueError) as err:
            # Writers often replace the two files one after the other: retry on the next poll.
            _log.warning("serving certificate changed but cannot be loaded yet: %s", err)
            return False
        self._signature = signature
        self._current = fresh
        _log.info("reloaded serving certificate from %s", self._files.cert_file)
        return True

    async def watch_files(self, interval: float) -> None:
        """Poll the certificate files forever (cancel to stop)."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
