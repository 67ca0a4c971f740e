"""kubeconfig and in-cluster configuration parsing."""

import base64

import pytest

from kubecommon.kube.config import KubeConfig, KubeConfigError, in_cluster_config, load_kube_config
from kubecommon.kube.exec_auth import ExecPlugin

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
    (tmp_path / "tok").write_text("t")
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


# --- a KUBECONFIG list, compared with kubectl itself (client-go's loader) ---------------------------

def _cluster_file(path, *, server, current=None, extra=""):
    current_line = f"current-context: {current}\n" if current is not None else ""
    path.write_text(f"""{current_line}clusters: [{{name: {server}, cluster: {{server: https://{server}:6443}}}}]
contexts: [{{name: {server}, context: {{cluster: {server}}}}}]
{extra}""")
    return path


def _kubectl_current_context(kubeconfig_list):
    import os
    import subprocess
    result = subprocess.run(["kubectl", "config", "current-context"], capture_output=True, text=True,
                            env={**os.environ, "KUBECONFIG": kubeconfig_list}, timeout=10, check=True)
    return result.stdout.strip()


@pytest.mark.integration
@pytest.mark.timeout(30)
@pytest.mark.parametrize("second_current, expected", [
    pytest.param("two", "one", id="the first file that sets current-context wins"),
    pytest.param(None, "one", id="a later file without current-context changes nothing"),
])
def test_current_context_of_a_list_is_the_first_files_like_kubectl(tmp_path, second_current, expected):
    first = _cluster_file(tmp_path / "first", server="one", current="one")
    second = _cluster_file(tmp_path / "second", server="two", current=second_current)
    kubeconfig_list = f"{first}:{second}"
    assert _kubectl_current_context(kubeconfig_list) == expected
    assert load_kube_config(kubeconfig_list).server == f"https://{expected}:6443"


@pytest.mark.integration
@pytest.mark.timeout(30)
def test_an_empty_file_in_a_list_is_skipped_like_kubectl(tmp_path):
    (tmp_path / "empty").write_text("")
    real = _cluster_file(tmp_path / "real", server="one", current="one")
    kubeconfig_list = f"{tmp_path / 'empty'}:{real}"
    assert _kubectl_current_context(kubeconfig_list) == "one"
    assert load_kube_config(kubeconfig_list).server == "https://one:6443"


def test_an_unreadable_token_file_is_refused_at_load_naming_it(tmp_path):
    with pytest.raises(KubeConfigError, match="tokenFile .*missing-token"):
        load_kube_config(kubeconfig(tmp_path, "{tokenFile: missing-token}"))


@pytest.mark.parametrize("unreadable", ["token", "ca.crt"])
def test_in_cluster_files_that_cannot_be_read_are_named_at_start(tmp_path, unreadable):
    """client-go's InClusterConfig reads the token at start; a token or CA the pod cannot read
    (wrong fsGroup, a directory mounted in its place) is a start-up error naming the file."""
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(CA)
    (tmp_path / unreadable).unlink()
    (tmp_path / unreadable).mkdir()
    with pytest.raises(KubeConfigError, match=f"in-cluster: cannot read {tmp_path / unreadable}: Is a directory"):
        in_cluster_config({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, sa_dir=tmp_path)


@pytest.mark.parametrize("cluster_line, message", [
    pytest.param("certificate-authority-data: bm90IGEgY2VydA=", "certificate-authority-data is not base64",
                 id="bad base64"),
    pytest.param("certificate-authority-data: bm90IGEgY2VydA==", "certificate-authority-data holds no PEM certificate",
                 id="data that is not a certificate"),
    pytest.param("certificate-authority: notes.txt", r"certificate-authority .*notes.txt holds no PEM certificate",
                 id="file that is not a certificate"),
])
def test_a_ca_kubectl_cannot_parse_is_refused_at_load_naming_the_field(tmp_path, cluster_line, message):
    (tmp_path / "notes.txt").write_text("hello")
    path = tmp_path / "config"
    path.write_text(f"""current-context: c
contexts: [{{name: c, context: {{cluster: c}}}}]
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:1", {cluster_line}}}}}]
""")
    with pytest.raises(KubeConfigError, match=f"cluster 'c': {message}"):
        load_kube_config(path)


@pytest.mark.parametrize("user, message", [
    pytest.param("{client-certificate: c.crt}", "user 'u': client-certificate needs client-key or client-key-data",
                 id="certificate without key"),
    pytest.param("{client-key-data: eA==}", "user 'u': client-key needs client-certificate or client-certificate-data",
                 id="key without certificate"),
])
def test_half_a_client_certificate_is_refused_at_load_like_kubectl(tmp_path, user, message):
    (tmp_path / "c.crt").write_text("x")
    with pytest.raises(KubeConfigError, match=message):
        load_kube_config(kubeconfig(tmp_path, user))


@pytest.mark.parametrize("value", ['"false"', '"true"', "1"])
def test_a_non_boolean_insecure_skip_tls_verify_is_refused_like_kubectl(tmp_path, value):
    """kubectl refuses the file; reading a quoted "false" as true would turn verification off."""
    with pytest.raises(KubeConfigError, match="cluster 'c': insecure-skip-tls-verify must be true or false"):
        load_kube_config(kubeconfig(tmp_path, "{token: abc}", f"    insecure-skip-tls-verify: {value}"))


@pytest.mark.parametrize("value, insecure", [("true", True), ("false", False)])
def test_a_boolean_insecure_skip_tls_verify_is_read(tmp_path, value, insecure):
    assert load_kube_config(kubeconfig(tmp_path, "{token: abc}", f"    insecure-skip-tls-verify: {value}")).insecure \
        is insecure


def test_secrets_stay_out_of_repr() -> None:
    """A config or exec stanza in a log line or traceback shows where it came from, not its secrets."""
    plugin = ExecPlugin(api_version="client.authentication.k8s.io/v1", command="get-token",
                        env=(("AWS_SECRET_ACCESS_KEY", "s3cr3t-env"),))
    config = KubeConfig(server="https://k8s:6443", token="s3cr3t-token", username="admin", password="s3cr3t-pw",
                        exec_plugin=plugin, source="/home/me/.kube/config")
    shown = repr(config)
    assert "https://k8s:6443" in shown and "get-token" in shown and "/home/me/.kube/config" in shown
    assert "s3cr3t" not in shown
