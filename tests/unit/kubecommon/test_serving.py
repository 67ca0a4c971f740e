"""TLS serving: self-signed generation, reload on file change, client certificates requested."""

import asyncio
import ssl

import pytest
from cryptography import x509

from kubecommon.serving import CertFiles, DynamicServingContext, ensure_self_signed, service_dns_names
from kubecommon import tls


def sans(cert_file):
    cert = x509.load_pem_x509_certificates(cert_file.read_bytes())[0]
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(ext.get_values_for_type(x509.DNSName)), {str(ip) for ip in ext.get_values_for_type(x509.IPAddress)}


def test_self_signed_has_service_names_and_is_reused(tmp_path):
    files = ensure_self_signed(tmp_path / "certs", dns_names=service_dns_names("adapter", "monitoring"),
                               key_algorithm="ecdsa")
    dns, ips = sans(files.cert_file)
    assert {"adapter.monitoring.svc", "adapter.monitoring", "adapter", "localhost"} <= dns
    assert ips == {"127.0.0.1"}
    assert files.generated and (files.key_file.stat().st_mode & 0o077) == 0
    # leaf followed by its CA, like k8s.io/apiserver writes apiserver.crt
    assert len(x509.load_pem_x509_certificates(files.cert_file.read_bytes())) == 2
    again = ensure_self_signed(tmp_path / "certs")
    assert not again.generated and again.cert_file.read_bytes() == files.cert_file.read_bytes()


class Server:
    """A raw asyncio TLS server recording the peer certificate of each connection."""

    def __init__(self, ctx):
        self.ctx, self.peers = ctx, []

    async def __aenter__(self):
        async def handle(reader, writer):
            ssl_object = writer.get_extra_info("ssl_object")
            self.peers.append(ssl_object.getpeercert(binary_form=True))
            writer.write(b"x")
            await writer.drain()
            writer.close()
        self.server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=self.ctx.listener)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    async def connect(self, client_ctx, server_hostname="127.0.0.1"):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, ssl=client_ctx,
                                                       server_hostname=server_hostname)
        cert = writer.get_extra_info("ssl_object").getpeercert()
        await reader.read(1)
        writer.close()
        return cert


@pytest.fixture(scope="module")
def cas():
    one, two = tls.generate_ca("one", key_algorithm="ecdsa"), tls.generate_ca("two", key_algorithm="ecdsa")

    def leaf(ca, cn):
        return tls.issue_certificate(ca, cn, ip_addresses=("127.0.0.1",), key_algorithm="ecdsa")

    proxy = tls.issue_certificate(two, "front-proxy-client", server=False, client=True, key_algorithm="ecdsa")
    return {"one": one, "two": two, "leaf1": leaf(one, "first"), "leaf2": leaf(two, "second"), "proxy": proxy}


def files_from(tmp_path, pair):
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    pair.write(cert, key)
    return CertFiles(cert_file=cert, key_file=key)


async def test_certificate_reload_applies_to_new_handshakes(tmp_path, cas):
    files = files_from(tmp_path, cas["leaf1"])
    ctx = DynamicServingContext(files)
    trust_both = tls.client_ssl_context(ca_pem=cas["one"].cert_pem + cas["two"].cert_pem)
    async with Server(ctx) as server:
        assert dict(x[0] for x in (await server.connect(trust_both))["subject"])["commonName"] == "first"
        assert not ctx.reload_if_changed()
        cas["leaf2"].write(files.cert_file, files.key_file)
        assert ctx.reload_if_changed()
        assert dict(x[0] for x in (await server.connect(trust_both))["subject"])["commonName"] == "second"


async def test_broken_replacement_keeps_serving_the_old_pair(tmp_path, cas):
    files = files_from(tmp_path, cas["leaf1"])
    ctx = DynamicServingContext(files)
    files.cert_file.write_bytes(cas["leaf2"].cert_pem)  # key not replaced yet: mismatched pair
    assert not ctx.reload_if_changed()
    async with Server(ctx) as server:
        cert = await server.connect(tls.client_ssl_context(ca_pem=cas["one"].cert_pem))
        assert dict(x[0] for x in cert["subject"])["commonName"] == "first"


async def test_client_certificate_requested_and_ca_swappable(tmp_path, cas):
    ctx = DynamicServingContext(files_from(tmp_path, cas["leaf1"]))
    ctx.set_client_ca(cas["two"].cert_pem)
    cas["proxy"].write(tmp_path / "p.crt", tmp_path / "p.key")
    with_cert = tls.client_ssl_context(ca_pem=cas["one"].cert_pem, cert_file=tmp_path / "p.crt",
                                       key_file=tmp_path / "p.key")
    without_cert = tls.client_ssl_context(ca_pem=cas["one"].cert_pem)
    async with Server(ctx) as server:
        await server.connect(with_cert)
        await server.connect(without_cert)
        await asyncio.sleep(0.05)
        assert server.peers[0] is not None and server.peers[1] is None


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
async def test_tls_below_1_2_is_refused(tmp_path, cas):
    ctx = DynamicServingContext(files_from(tmp_path, cas["leaf1"]))
    old = tls.client_ssl_context(ca_pem=cas["one"].cert_pem)
    old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    async with Server(ctx) as server:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await server.connect(old)
