"""TLS helpers as clients and servers observe them: CA and leaf certificates, client-certificate
verification, the serving context."""

import datetime as dt
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from kubecommon.tls import certificate_subject, generate_ca, issue_certificate, server_ssl_context, verify_chain


def _der(pair) -> bytes:
    return pair.certificate.public_bytes(serialization.Encoding.DER)


def test_client_certificate_verification() -> None:
    ca, other = generate_ca("front-proxy-ca"), generate_ca("attacker-ca")
    client = issue_certificate(ca, "front-proxy-client", server=False, client=True, organizations=["system:masters"])
    assert verify_chain(_der(client), ca.cert_pem)
    assert not verify_chain(_der(client), other.cert_pem)
    assert certificate_subject(_der(client)) == ("front-proxy-client", ("system:masters",))
    serving_only = issue_certificate(ca, "server", server=True, client=False)
    assert not verify_chain(_der(serving_only), ca.cert_pem), "serverAuth-only certs are not client identities"
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=400)
    assert not verify_chain(_der(client), ca.cert_pem, now=later), "expired certificates are rejected"


def test_server_context_requests_client_certificates(tmp_path) -> None:
    ca = generate_ca("ca")
    serving = issue_certificate(ca, "adapter", dns_names=["adapter.monitoring.svc"], ip_addresses=["127.0.0.1"])
    serving.write(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert oct((tmp_path / "tls.key").stat().st_mode & 0o777) == "0o600"
    context = server_ssl_context(tmp_path / "tls.crt", tmp_path / "tls.key", client_ca_pem=ca.cert_pem)
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    with pytest.raises(ValueError):
        server_ssl_context(tmp_path / "tls.crt", tmp_path / "tls.key", min_version="VersionTLS10")


def test_ca_and_leaf_constraints() -> None:
    ca = generate_ca("ca", key_algorithm="ecdsa")
    leaf = issue_certificate(ca, "adapter", key_algorithm="ecdsa")
    for pair, is_ca in ((ca, True), (leaf, False)):
        cert = pair.certificate
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is is_ca
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.digital_signature and usage.key_encipherment
        assert usage.key_cert_sign is is_ca and usage.crl_sign is is_ca, "only the CA may sign"
    assert leaf.certificate.issuer == ca.certificate.subject
    assert (leaf.certificate.not_valid_after_utc - leaf.certificate.not_valid_before_utc).days == 365


def test_an_ed25519_signature_claiming_an_rsa_ca_is_rejected_not_a_crash() -> None:
    # A client controls its certificate: one naming our CA as issuer but signed with an Ed25519
    # key (no hash algorithm) must read as "not signed by the CA", never raise.
    ca = generate_ca("front-proxy-ca")
    key = ed25519.Ed25519PrivateKey.generate()
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    forged = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-client")]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=1))
        .sign(key, None)
    )
    assert verify_chain(forged.public_bytes(serialization.Encoding.DER), ca.cert_pem) is False
