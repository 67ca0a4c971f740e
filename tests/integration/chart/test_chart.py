"""The Helm chart rendered by the real helm binary: lint, APIServices and TLS.

- `helm lint` accepts the defaults and a realistic production values file;
- one APIService per enabled group-version, pointing at the chart's Service, trusted through a
  caBundle that really signed the serving certificate (checked with `cryptography` and a TLS
  handshake verifying `<svc>.<ns>.svc` exactly as kube-aggregator does).

Elsewhere in this directory: the rule file (test_chart_rules), the Deployment's args and RBAC
(test_chart_deployment), bad values (test_chart_bad_values), and a real `helm install` into the
API-server stand-in with the adapter running (test_chart_standin).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from kubecommon import tls
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, Helm, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REALISTIC = CHART / "ci" / "realistic-values.yaml"
SERVICE_HOST = f"{FULLNAME}.{NAMESPACE}.svc"
DEFAULT_APISERVICES = {"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io",
                       "v1beta1.external.metrics.k8s.io"}


@pytest.fixture(scope="module")
def default(render: Callable[..., Rendered]) -> Rendered:
    return render()


@pytest.fixture(scope="module")
def realistic(render: Callable[..., Rendered]) -> Rendered:
    return render(files=[REALISTIC])


def _args(rendered: Rendered) -> list[str]:
    container = rendered.container
    return [*container.get("command", []), *container["args"]]


def _flag(args: list[str], name: str) -> str | None:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(values) <= 1, f"--{name} given {len(values)} times"
    return values[0] if values else None


# --- lint ------------------------------------------------------------------------------------


@pytest.mark.parametrize("files", [pytest.param([], id="defaults"), pytest.param([REALISTIC], id="realistic")])
def test_helm_lint_accepts(helm: Helm, files: list[Path]) -> None:
    result = helm.lint(files=files)
    assert result.returncode == 0, result.output
    assert "0 chart(s) failed" in result.output


# --- APIServices and TLS -----------------------------------------------------------------------


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param({}, DEFAULT_APISERVICES, id="defaults"),
    pytest.param({"apiService": {"customMetrics": {"v1beta2": {"enabled": False}}}},
                 DEFAULT_APISERVICES - {"v1beta2.custom.metrics.k8s.io"}, id="no-v1beta2"),
    pytest.param({"apiService": {"externalMetrics": {"enabled": False}}},
                 DEFAULT_APISERVICES - {"v1beta1.external.metrics.k8s.io"}, id="keda-owns-external"),
    pytest.param({"apiService": {"resourceMetrics": {"enabled": True}}, "rules": {"existing": "my-rules"}},
                 DEFAULT_APISERVICES | {"v1beta1.metrics.k8s.io"}, id="metrics-k8s-io"),
])
def test_one_apiservice_per_enabled_group_version(quick_render: Callable[..., Rendered], values: dict[str, Any],
                                                  expected: set[str]) -> None:
    rendered = quick_render(values)
    assert rendered.names("APIService") == expected
    service = rendered.one("Service", FULLNAME)
    [port] = service["spec"]["ports"]
    for api in rendered.all("APIService"):
        spec = api["spec"]
        assert api["metadata"]["name"] == f"{spec['version']}.{spec['group']}"
        assert spec["service"] == {"name": FULLNAME, "namespace": NAMESPACE, "port": port["port"]}
        assert spec["groupPriorityMinimum"] == 100
    # kube-aggregator matches the EndpointSlice port by the Service port's name.
    assert port["name"] == "https" and port["targetPort"] == "https"
    assert [p["name"] for p in rendered.container["ports"]] == ["https"]


def test_v1beta2_is_the_preferred_custom_metrics_version(default: Rendered) -> None:
    v1 = default.one("APIService", "v1beta1.custom.metrics.k8s.io")["spec"]["versionPriority"]
    v2 = default.one("APIService", "v1beta2.custom.metrics.k8s.io")["spec"]["versionPriority"]
    assert v2 > v1


def _handshake(cert_pem: bytes, key_pem: bytes, ca_pem: bytes, server_name: str, tmp_path: Path) -> None:
    """A TLS handshake in memory: the server serves cert/key, the client trusts only ca_pem and
    checks server_name, as kube-apiserver does for `<svc>.<ns>.svc`. Raises ssl.SSLError on failure."""
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    server_ctx = tls.server_ssl_context(str(cert_file), str(key_file))
    client_ctx = ssl.create_default_context(cadata=ca_pem.decode())
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_name)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("TLS handshake did not finish")


def _ca_bundles(rendered: Rendered) -> set[bytes]:
    bundles = set()
    for api in rendered.all("APIService"):
        assert "insecureSkipTLSVerify" not in api["spec"]
        bundles.add(base64.b64decode(api["spec"]["caBundle"]))
    return bundles


def test_generated_ca_signed_the_serving_certificate(default: Rendered, tmp_path: Path) -> None:
    [ca_pem] = _ca_bundles(default)
    secret = default.one("Secret", f"{FULLNAME}-tls")
    assert secret["type"] == "kubernetes.io/tls"
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert data["ca.crt"] == ca_pem
    ca, leaf = x509.load_pem_x509_certificate(ca_pem), x509.load_pem_x509_certificate(data["tls.crt"])
    leaf.verify_directly_issued_by(ca)
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert SERVICE_HOST in sans.get_values_for_type(x509.DNSName)
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages
    _handshake(data["tls.crt"], data["tls.key"], ca_pem, SERVICE_HOST, tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(data["tls.crt"], data["tls.key"], ca_pem, f"other.{NAMESPACE}.svc", tmp_path)


def test_serving_certificate_is_what_the_adapter_is_told_to_serve(default: Rendered) -> None:
    args = _args(default)
    pod = default.adapter["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in default.container["volumeMounts"]}
    [tls_volume] = [v for v in pod["volumes"] if v["name"] == "tls"]
    assert tls_volume["secret"]["secretName"] == f"{FULLNAME}-tls"
    assert _flag(args, "tls-cert-file") == f"{mounts['tls']}/tls.crt"
    assert _flag(args, "tls-private-key-file") == f"{mounts['tls']}/tls.key"


def test_user_supplied_certificate(render: Callable[..., Rendered], tmp_path: Path) -> None:
    ca = tls.generate_ca("my-ca", days=30)
    leaf = tls.issue_certificate(ca, SERVICE_HOST, dns_names=(SERVICE_HOST,), server=True, days=30)
    rendered = render({"tls": {"enable": True, "ca": ca.cert_pem.decode(), "certificate": leaf.cert_pem.decode(),
                               "key": leaf.key_pem.decode()}})
    assert _ca_bundles(rendered) == {ca.cert_pem}
    data = {k: base64.b64decode(v) for k, v in rendered.one("Secret", f"{FULLNAME}-tls")["data"].items()}
    assert (data["tls.crt"], data["tls.key"]) == (leaf.cert_pem, leaf.key_pem)
    _handshake(data["tls.crt"], data["tls.key"], ca.cert_pem, SERVICE_HOST, tmp_path)


def test_user_supplied_existing_secret(render: Callable[..., Rendered]) -> None:
    ca = tls.generate_ca("my-ca", days=30)
    rendered = render({"tls": {"enable": True, "ca": ca.cert_pem.decode(), "existingSecret": "cert-manager-tls"}})
    assert _ca_bundles(rendered) == {ca.cert_pem}
    assert rendered.all("Secret") == []
    pod = rendered.adapter["spec"]["template"]["spec"]
    assert {"name": "tls", "secret": {"secretName": "cert-manager-tls"}} in pod["volumes"]


def test_insecure_skip_tls_verify_only_when_asked(render: Callable[..., Rendered]) -> None:
    rendered = render({"tls": {"insecureSkipTLSVerify": True}})
    for api in rendered.all("APIService"):
        assert api["spec"]["insecureSkipTLSVerify"] is True
        assert "caBundle" not in api["spec"]
    assert rendered.all("Secret") == []
    args = _args(rendered)
    # The adapter self-signs into --cert-dir, which must be a writable emptyDir.
    assert _flag(args, "tls-cert-file") is None
    cert_dir = _flag(args, "cert-dir")
    pod = rendered.adapter["spec"]["template"]["spec"]
    [mount] = [m for m in rendered.container["volumeMounts"] if m["mountPath"] == cert_dir]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume and not mount.get("readOnly")
