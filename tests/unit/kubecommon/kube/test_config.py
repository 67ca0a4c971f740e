"""kubeconfig and in-cluster configuration parsing."""

import base64

import pytest

from kubecommon.kube.config import KubeConfigError, in_cluster_config, load_kube_config

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def kubeconfig(tmp_path, user, cluster_extra=""):
    path = tmp_path / "config"
    path.write_text(f"""
apiVersion: v1
kind: Config
current-context: ctx
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: {base64.b64encode(CA).decode()}
{cluster_extra}
users:
- name: u
  user: {user}
""")
    return path


def test_token_and_inline_ca(tmp_path):
    cfg = load_kube_config(kubeconfig(tmp_path, "{token: abc}"))
    assert (cfg.server, cfg.ca_pem, cfg.token, cfg.insecure) == ("https://127.0.0.1:6443", CA, "abc", False)


def test_inline_client_certificate_written_to_private_files(tmp_path):
    data = base64.b64encode(b"PEM").decode()
    cfg = load_kube_config(kubeconfig(tmp_path, f"{{client-certificate-data: {data}, client-key-data: {data}}}"))
    with open(cfg.client_cert_file, "rb") as handle:
        assert handle.read() == b"PEM"
    import os
    assert os.stat(cfg.client_key_file).st_mode & 0o077 == 0


def test_relative_token_file(tmp_path):
    cfg = load_kube_config(kubeconfig(tmp_path, "{tokenFile: tok}"))
    assert cfg.token_file == str(tmp_path / "tok")


@pytest.mark.parametrize("user, message", [
    pytest.param("{auth-provider: {name: gcp}}", "auth-provider plugin, which client-go removed",
                 id="auth-provider plugin"),
    pytest.param("{exec: {command: aws}}", "exec: apiVersion None is not one of", id="exec without apiVersion"),
])
def test_unsupported_users(tmp_path, user, message):
    with pytest.raises(KubeConfigError, match=message):
        load_kube_config(kubeconfig(tmp_path, user))


def test_missing_file_names_it(tmp_path):
    with pytest.raises(KubeConfigError, match="nope"):
        load_kube_config(tmp_path / "nope")


def test_in_cluster(tmp_path):
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(CA)
    cfg = in_cluster_config({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
                            sa_dir=tmp_path)
    assert (cfg.server, cfg.ca_pem, cfg.token_file) == ("https://10.0.0.1:443", CA, str(tmp_path / "token"))
    with pytest.raises(KubeConfigError, match="--kubeconfig"):
        in_cluster_config({}, sa_dir=tmp_path)
