"""The controller picks its credentials in controller-runtime's order: --kubeconfig, every file
of $KUBECONFIG (merged as kubectl merges them), the pod's service account, ~/.kube/config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.kubeconfig import client_config
from kubecommon.kube.config import KubeConfigError


def _kubeconfig(path: Path, *, server: str, token: str, current: bool = True) -> Path:
    document = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": f"c-{token}", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": f"u-{token}", "user": {"token": token}}],
        "contexts": [{"name": f"ctx-{token}", "context": {"cluster": f"c-{token}", "user": f"u-{token}"}}],
    }
    if current:
        document["current-context"] = f"ctx-{token}"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    return {"flag": _kubeconfig(tmp_path / "flag", server="https://flag:6443", token="flag"),
            "first": _kubeconfig(tmp_path / "first", server="https://first:6443", token="first", current=False),
            "second": _kubeconfig(tmp_path / "second", server="https://second:6443", token="second"),
            "home": home, "home_config": _kubeconfig(home / ".kube" / "config", server="https://home:6443",
                                                     token="home")}


IN_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_the_flag_wins_over_everything(files: dict[str, Path]) -> None:
    env = {**IN_POD, "KUBECONFIG": str(files["second"])}
    assert client_config(str(files["flag"]), env, home=files["home"]).server == "https://flag:6443"


def test_kubeconfig_files_are_merged_and_win_over_the_service_account(files: dict[str, Path]) -> None:
    # the first file sets no current-context: the second's applies, with its own cluster and user
    env = {**IN_POD, "KUBECONFIG": f"{files['first']}:{files['second']}"}
    config = client_config(None, env, home=files["home"])
    assert (config.server, config.token) == ("https://second:6443", "second")


def test_in_a_pod_without_kubeconfig_the_service_account(files: dict[str, Path]) -> None:
    with pytest.raises(KubeConfigError, match="in-cluster"):  # no mounted token on this machine
        client_config(None, IN_POD, home=files["home"])


def test_outside_a_pod_the_home_config(files: dict[str, Path]) -> None:
    assert client_config(None, {"KUBECONFIG": ""}, home=files["home"]).server == "https://home:6443"
