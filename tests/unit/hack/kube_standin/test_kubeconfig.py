"""hack/'s one kubeconfig writer: what it writes, the product's kubeconfig reader uses as written,
only its owner can read it, and the token and CA read back are the ones written."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from hack.kube_standin.kubeconfig import kubeconfig, token_and_ca, write_kubeconfig
from kubecommon.kube.config import load_kube_config

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.mark.timeout(10)  # load_kube_config imports the kubernetes package (0.2-2 s cold)
def test_the_product_reads_the_written_server_token_and_ca(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "a" / "kubeconfig",
                            kubeconfig("https://127.0.0.1:6443", {"admin": {"token": "s3cret"}}, ca_pem=CA))
    config = load_kube_config(path)
    assert (config.server, config.token, config.ca_pem) == ("https://127.0.0.1:6443", "s3cret", CA)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert token_and_ca(path) == ("s3cret", CA)


def test_contexts_pick_users_and_the_current_one_is_honoured(tmp_path: Path) -> None:
    doc = kubeconfig("https://h:1", {"admin": {"token": "t"}, "cert": {"client-certificate": "c.crt"}},
                     contexts={"main": "admin", "other": "cert"}, current="other", namespace="default")
    assert doc["current-context"] == "other"
    assert {c["name"]: c["context"] for c in doc["contexts"]} == {
        "main": {"cluster": "standin", "namespace": "default", "user": "admin"},
        "other": {"cluster": "standin", "namespace": "default", "user": "cert"}}
    path = write_kubeconfig(tmp_path / "kubeconfig", doc)
    write_kubeconfig(path, kubeconfig("http://h:2", {"bench": {"token": "b"}}, cluster="bench"))  # replaced whole
    again = yaml.safe_load(path.read_text())
    assert (again["current-context"], again["clusters"]) == ("bench", [{"name": "bench", "cluster": {"server": "http://h:2"}}])


def test_a_context_naming_an_unknown_user_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown users \['nobody'\]"):
        kubeconfig("https://h:1", {"admin": {"token": "t"}}, contexts={"main": "nobody"})
