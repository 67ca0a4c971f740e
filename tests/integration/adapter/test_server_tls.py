"""TLS of the real adapter process: given certificates reloaded from disk without a restart,
a self-signed certificate with the Service names, TLS 1.2 minimum."""

from __future__ import annotations

import socket
import ssl
import time

import pytest
from cryptography import x509

from kubecommon import tls
from tests.fixtures.adapter import start_adapter

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

RULES = "rules: []\n"


def served_certificate(port: int, ca_pem: bytes) -> x509.Certificate:
    context = tls.client_ssl_context(ca_pem=ca_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        return x509.load_der_x509_certificate(conn.getpeercert(binary_form=True))


def common_name(cert: x509.Certificate) -> str:
    return cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value


@pytest.fixture(scope="module")
def adapter_with_files(kube_standin, tmp_path_factory):
    work = tmp_path_factory.mktemp("adapter-tls")
    ca = tls.generate_ca("serving-ca", key_algorithm="ecdsa")
    tls.issue_certificate(ca, "first", ip_addresses=("127.0.0.1",), key_algorithm="ecdsa").write(
        work / "tls.crt", work / "tls.key")
    # Prometheus is not needed to serve TLS: readiness is not waited for.
    with start_adapter(work / "adapter", prometheus_url="http://127.0.0.1:9", kubeconfig=kube_standin.kubeconfig,
                       rules=RULES, ready=False, args=[f"--tls-cert-file={work / 'tls.crt'}",
                                                       f"--tls-private-key-file={work / 'tls.key'}"]) as adapter:
        yield adapter, ca, work


def test_certificate_files_are_reloaded_without_restart(adapter_with_files):
    adapter, ca, work = adapter_with_files
    pid = adapter.proc.pid
    assert common_name(served_certificate(adapter.port, ca.cert_pem)) == "first"
    tls.issue_certificate(ca, "second", ip_addresses=("127.0.0.1",), key_algorithm="ecdsa").write(
        work / "tls.crt", work / "tls.key")
    deadline = time.monotonic() + 5
    while common_name(served_certificate(adapter.port, ca.cert_pem)) != "second":
        assert time.monotonic() < deadline, "new certificate not served"
        time.sleep(0.1)
    assert adapter.running and adapter.proc.pid == pid
    assert adapter.request("/healthz", verify=False).status == 200


def test_tls_1_1_is_refused(adapter_with_files):
    adapter, ca, _ = adapter_with_files
    context = tls.client_ssl_context(ca_pem=ca.cert_pem)
    context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    with pytest.warns(DeprecationWarning):
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with socket.create_connection(("127.0.0.1", adapter.port), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_self_signed_certificate_names_the_service(kube_standin, tmp_path):
    with start_adapter(tmp_path / "adapter", prometheus_url="http://127.0.0.1:9",
                       kubeconfig=kube_standin.kubeconfig, rules=RULES, ready=False,
                       args=["--service-name=prom-adapter", "--service-namespace=monitoring"]) as adapter:
        bundle = adapter.cert_file.read_bytes()
        leaf = served_certificate(adapter.port, bundle)
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {"prom-adapter.monitoring.svc", "localhost"} <= set(names.get_values_for_type(x509.DNSName))
        # and clients verify it by that name, as kube-aggregator does
        context = tls.client_ssl_context(ca_pem=bundle)
        with socket.create_connection(("127.0.0.1", adapter.port), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="prom-adapter.monitoring.svc") as conn:
            assert conn.version() in ("TLSv1.2", "TLSv1.3")
