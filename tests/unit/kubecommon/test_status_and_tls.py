"""Status bodies and TLS helpers as clients observe them."""

import datetime as dt
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from kubecommon import status
from kubecommon.tls import certificate_subject, generate_ca, issue_certificate, server_ssl_context, verify_chain


@pytest.mark.parametrize(("error", "code", "reason"), [
    pytest.param(status.BadRequest("x"), 400, "BadRequest", id="bad request"),
    pytest.param(status.Unauthorized(), 401, "Unauthorized", id="unauthorized"),
    pytest.param(status.Forbidden("x"), 403, "Forbidden", id="forbidden"),
    pytest.param(status.NotFound.for_path(), 404, "NotFound", id="not found"),
    pytest.param(status.Conflict("x"), 409, "Conflict", id="conflict"),
    pytest.param(status.Gone("x"), 410, "Expired", id="gone"),
    pytest.param(status.NotAcceptable.for_types(), 406, "NotAcceptable", id="not acceptable"),
    pytest.param(status.ServiceUnavailable("x"), 503, "ServiceUnavailable", id="unavailable"),
    pytest.param(status.Timeout("slow"), 504, "Timeout", id="timeout"),
    pytest.param(status.InternalError.wrapping("boom"), 500, "InternalError", id="internal"),
])
def test_status_body_shape(error: status.StatusError, code: int, reason: str) -> None:
    body = error.to_dict()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["metadata"] == {}
    assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason
    rebuilt = status.status_error_from_dict(body, code)
    assert type(rebuilt) is type(error) and rebuilt.message == error.message


def test_metrics_server_not_found_wording() -> None:
    body = status.NotFound.for_object("pods", "metrics.k8s.io", "default/web-0").to_dict()
    assert body["message"] == 'pods.metrics.k8s.io "default/web-0" not found'
    assert body["details"] == {"name": "default/web-0", "group": "metrics.k8s.io", "kind": "pods"}


def test_forbidden_wording_matches_kube_apiserver() -> None:
    error = status.Forbidden.for_request(user="jane", verb="get", resource="pods", subresource="rps",
                                         group="custom.metrics.k8s.io", name="*", namespace="shop")
    assert error.message == ('pods.custom.metrics.k8s.io "*" is forbidden: User "jane" cannot get resource '
                             '"pods/rps" in API group "custom.metrics.k8s.io" in the namespace "shop"')
    cluster = status.Forbidden.for_request(user="jane", verb="list", resource="nodes", group="metrics.k8s.io")
    assert cluster.message.endswith('in API group "metrics.k8s.io" at the cluster scope')
    path = status.Forbidden.for_request(user="jane", verb="get", path="/metrics")
    assert path.message == 'forbidden: User "jane" cannot get path "/metrics"'


def test_forbidden_carries_the_authorizers_reason_after_a_colon() -> None:
    resource = status.Forbidden.for_request(user="jane", verb="list", resource="nodes", group="metrics.k8s.io",
                                            reason="no RBAC policy matched")
    assert resource.message.endswith('at the cluster scope: no RBAC policy matched')
    path = status.Forbidden.for_request(user="jane", verb="get", path="/metrics", reason="no RBAC policy matched")
    assert path.message == 'forbidden: User "jane" cannot get path "/metrics": no RBAC policy matched'


@pytest.mark.parametrize(("code", "kind"), [
    pytest.param(400, status.BadRequest, id="400"), pytest.param(401, status.Unauthorized, id="401"),
    pytest.param(403, status.Forbidden, id="403"), pytest.param(404, status.NotFound, id="404"),
    pytest.param(405, status.MethodNotAllowed, id="405"), pytest.param(406, status.NotAcceptable, id="406"),
    pytest.param(409, status.Conflict, id="409 is Conflict, not AlreadyExists"),
    pytest.param(410, status.Gone, id="410"), pytest.param(415, status.UnsupportedMediaType, id="415"),
    pytest.param(422, status.Invalid, id="422"), pytest.param(429, status.TooManyRequests, id="429"),
    pytest.param(500, status.InternalError, id="500"), pytest.param(503, status.ServiceUnavailable, id="503"),
    pytest.param(504, status.Timeout, id="504"),
])
def test_non_status_body_maps_by_code(code: int, kind: type[status.StatusError]) -> None:
    error = status.status_error_from_dict({"oops": 1}, code)
    assert type(error) is kind and error.code == code


def test_unknown_code_keeps_its_number() -> None:
    error = status.status_error_from_dict(None, 418)
    assert type(error) is status.StatusError and error.code == 418
    assert error.message == "the server responded with HTTP 418"


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
