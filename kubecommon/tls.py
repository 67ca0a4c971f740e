"""TLS material and contexts for both binaries (and the development tools under hack/).

Aggregated API servers live or die by their certificates: a serving certificate with the Service's
DNS names, a handshake that *requests* (but does not require) a client certificate so the
front-proxy identity can be checked, and client certificates verified against a CA bundle that can
change at run time. These helpers keep that logic in one place, built on `cryptography`.

No network I/O; `CertKeyPair.write` and the `*_file` arguments touch only the named files.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CertKeyPair",
    "certificate_subject",
    "client_ssl_context",
    "generate_ca",
    "issue_certificate",
    "load_pem_certificates",
    "server_ssl_context",
    "verify_chain",
]


@dataclass(frozen=True, slots=True)
class CertKeyPair:
    """A PEM certificate (possibly followed by its issuers) and its PEM private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: str | Path, key_path: str | Path) -> None:
        """Write both files; the key is created owner-readable only."""
        Path(cert_path).write_bytes(self.cert_pem)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as key_file:
            key_file.write(self.key_pem)

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


def _new_key(algorithm: str = "rsa") -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    # "ecdsa" (P-256) exists for tools that mint many certificates at start-up: an RSA-2048 key
    # costs ~0.2 s to generate, a P-256 key well under a millisecond.
    if algorithm == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if algorithm != "rsa":
        raise ValueError(f"unsupported key algorithm {algorithm!r}; use 'rsa' or 'ecdsa'")
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _key_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _validity(days: int, now: _dt.datetime | None) -> tuple[_dt.datetime, _dt.datetime]:
    # Backdated an hour, as k8s.io/client-go/util/cert does, to tolerate clock skew.
    start = (now or _dt.datetime.now(_dt.timezone.utc)) - _dt.timedelta(hours=1)
    return start, start + _dt.timedelta(days=days)


def _builder(*, subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey,
             ca: bool, days: int, now: _dt.datetime | None) -> x509.CertificateBuilder:
    """What CA and leaf certificates share; `ca` decides BasicConstraints and the signing usages."""
    not_before, not_after = _validity(days, now)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=ca,
                                     crl_sign=ca, content_commitment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False),
                       critical=True)
    )


def generate_ca(common_name: str, *, days: int = 3650, now: _dt.datetime | None = None,
                key_algorithm: str = "rsa") -> CertKeyPair:
    """A self-signed CA certificate (RSA 2048, or P-256 with key_algorithm="ecdsa")."""
    key = _new_key(key_algorithm)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(subject=name, issuer=name, public_key=key.public_key(), ca=True, days=days, now=now)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_certificate(ca: CertKeyPair, common_name: str, *, dns_names: Sequence[str] = (),
                      ip_addresses: Sequence[str] = (), organizations: Sequence[str] = (),
                      server: bool = True, client: bool = False, days: int = 365,
                      now: _dt.datetime | None = None, key_algorithm: str = "rsa") -> CertKeyPair:
    """A leaf certificate signed by `ca`; organizations become groups for client certificates."""
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert isinstance(ca_key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey)
    key = _new_key(key_algorithm)
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    builder = (
        _builder(subject=x509.Name(attributes), issuer=ca_cert.subject, public_key=key.public_key(),
                 ca=False, days=days, now=now)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
                       critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return CertKeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def load_pem_certificates(pem: bytes) -> list[x509.Certificate]:
    """Every certificate in a PEM bundle (an empty or certificate-less bundle gives [])."""
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        return []
    return x509.load_pem_x509_certificates(pem)


def certificate_subject(der: bytes) -> tuple[str, tuple[str, ...]]:
    """(common name, organizations) of a DER certificate: user name and groups for x509 auth.

    With several CN attributes the LAST one counts, as in Go's `pkix.Name.CommonName`, so the name
    is the one kube-apiserver and CSR approvers see for the same certificate."""
    cert = x509.load_der_x509_certificate(der)
    common_names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(common_names[-1].value) if common_names else "",
            tuple(str(org.value) for org in orgs))


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    if cert.issuer != issuer.subject:
        return False
    public_key = issuer.public_key()
    algorithm = cert.signature_hash_algorithm
    if algorithm is None:  # Ed25519/Ed448 signatures: not an RSA or ECDSA issuer's, so not ours
        return False
    try:
        if isinstance(public_key, rsa.RSAPublicKey):
            public_key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), algorithm)
        elif isinstance(public_key, ec.EllipticCurvePublicKey):
            public_key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algorithm))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def verify_chain(leaf_der: bytes, ca_pem: bytes, *, now: _dt.datetime | None = None,
                 intermediates_der: Sequence[bytes] = ()) -> bool:
    """True when the leaf chains to a CA in `ca_pem`, every link is in its validity period, and
    the leaf may be used for client authentication (an EKU, when present, lists clientAuth)."""
    moment = now or _dt.datetime.now(_dt.timezone.utc)
    try:
        leaf = x509.load_der_x509_certificate(leaf_der)
        pool = [x509.load_der_x509_certificate(der) for der in intermediates_der]
        roots = load_pem_certificates(ca_pem)
    except ValueError:
        return False
    if not _client_usage_allowed(leaf):
        return False
    current, depth = leaf, 0
    while depth < 8:
        if not current.not_valid_before_utc <= moment <= current.not_valid_after_utc:
            return False
        if any(_signed_by(current, root) and root.not_valid_before_utc <= moment <= root.not_valid_after_utc
               for root in roots):
            return True
        parent = next((cert for cert in pool if _signed_by(current, cert)), None)
        if parent is None:
            return False
        current, depth = parent, depth + 1
    return False


def _client_usage_allowed(cert: x509.Certificate) -> bool:
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CLIENT_AUTH in eku or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in eku


_TLS_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}


def server_ssl_context(cert_file: str | Path, key_file: str | Path, *, client_ca_pem: bytes | None = None,
                       min_version: str = "VersionTLS12") -> ssl.SSLContext:
    """A serving context; with `client_ca_pem` the handshake requests (not requires) a client cert.

    Requesting rather than requiring matches kube-apiserver's delegated authentication: requests
    without a certificate continue to bearer-token authentication.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if min_version not in _TLS_VERSIONS:
        raise ValueError(f"unsupported TLS minimum version {min_version!r}; use one of {sorted(_TLS_VERSIONS)}")
    context.minimum_version = _TLS_VERSIONS[min_version]
    context.load_cert_chain(str(cert_file), str(key_file))
    context.set_alpn_protocols(["http/1.1"])
    if client_ca_pem and load_pem_certificates(client_ca_pem):
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=client_ca_pem.decode())
    return context


def client_ssl_context(*, ca_pem: bytes | None = None, ca_file: str | Path | None = None,
                       cert_file: str | Path | None = None, key_file: str | Path | None = None,
                       insecure: bool = False) -> ssl.SSLContext:
    """A client context verifying the server against the given CA (or the system store)."""
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None,
                                         cadata=ca_pem.decode() if ca_pem else None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
    return context
