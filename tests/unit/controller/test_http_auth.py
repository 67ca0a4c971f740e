"""Who may read the controller's endpoints: the always-allowed paths flag, the review it sends, and
the flags that choose HTTPS (the guard itself runs against the stand-in in
tests/integration/controller/test_run_smoke.py)."""

from __future__ import annotations

import pytest

from controller.http_auth import DEFAULT_ALWAYS_ALLOW, AlwaysAllowPaths, access_review_spec
from controller.options import parse
from kubecommon.kube.identity import UserInfo


@pytest.mark.parametrize(("flag", "path", "allowed"), [
    (DEFAULT_ALWAYS_ALLOW, "/healthz", True),
    (DEFAULT_ALWAYS_ALLOW, "/readyz", True),
    (DEFAULT_ALWAYS_ALLOW, "/livez", True),
    (DEFAULT_ALWAYS_ALLOW, "/metrics", False),
    (DEFAULT_ALWAYS_ALLOW, "/healthz/extra", False),
    (DEFAULT_ALWAYS_ALLOW, "/debug/decisions/pas/a/b", False),
    ("/metrics, /debug/*", "/debug/decisions/pas/a/b", True),
    ("/metrics, /debug/*", "/metrics", True),
    ("/metrics, /debug/*", "/debugger", False),
    ("", "/healthz", False),
], ids=["healthz", "readyz", "livez", "metrics", "exact-only", "debug", "prefix", "listed", "prefix-is-a-dir", "none"])
def test_always_allowed_paths(flag: str, path: str, allowed: bool) -> None:
    assert AlwaysAllowPaths.parse(flag).allows(path) is allowed


@pytest.mark.parametrize(("flag", "message"), [
    ("healthz", "path 'healthz' must start with /"),
    ("/a/*/b", "path '/a/*/b': only a trailing * is allowed"),
], ids=["relative", "inner-star"])
def test_bad_always_allowed_paths_are_usage_errors(flag: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse([f"--authorization-always-allow-paths={flag}"])
    assert exit_info.value.code == 2
    assert f"--authorization-always-allow-paths: {message}" in capsys.readouterr().err


def test_the_review_asks_for_the_path_as_the_authenticated_user() -> None:
    user = UserInfo(name="system:serviceaccount:monitoring:prometheus", uid="u1",
                    groups=("system:serviceaccounts", "system:serviceaccounts:monitoring"))
    assert access_review_spec(user, "/metrics", "get") == {
        "user": "system:serviceaccount:monitoring:prometheus", "uid": "u1",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}


def test_the_port_is_secure_unless_told_otherwise(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse([]).metrics_secure is True
    assert parse(["--metrics-secure=false"]).metrics_secure is False
    given = parse(["--tls-cert-file=/c/tls.crt", "--tls-private-key-file=/c/tls.key"])
    assert (given.tls_cert_file, given.tls_private_key_file) == ("/c/tls.crt", "/c/tls.key")
    with pytest.raises(SystemExit):
        parse(["--tls-cert-file=/c/tls.crt"])
    assert "--tls-cert-file and --tls-private-key-file go together" in capsys.readouterr().err
