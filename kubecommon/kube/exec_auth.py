"""kubeconfig `exec` credential plugins (aws eks get-token, gke-gcloud-auth-plugin, kubelogin, ...).

Job: run the plugin the way client-go does (`client.authentication.k8s.io/v1` or `v1beta1`
ExecCredential on stdout, `KUBERNETES_EXEC_INFO` in the environment, kubeconfig `env` and `args`,
`provideClusterInfo`) through the `kubernetes` package's `ExecProvider`, in a worker thread so the
event loop never blocks; keep the credential (bearer token, or client certificate and key written to
0600 files) until its `expirationTimestamp` (minus a safety margin) or until the API server answers
401; one plugin run at a time, shared by every request waiting for it.

Non-goals: interactive plugins that prompt (there is no terminal in a pod), the removed
`auth-provider` plugins (gcp, azure), HTTP (the client asks `ExecCredentials.current()`).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubecommon import kubetime

__all__ = ["ExecCredential", "ExecCredentials", "ExecPlugin", "ExecPluginError"]

KNOWN_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_EXPIRY_MARGIN_SECONDS = 10.0  # renew a little before the server would start refusing


class ExecPluginError(RuntimeError):
    """The plugin could not be run or printed something that is not a usable ExecCredential."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecPlugin:
    """A kubeconfig user's `exec` stanza, validated at load time."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""  # the kubeconfig's directory: relative commands resolve like client-go
    cluster: Mapping[str, Any] | None = None  # set when provideClusterInfo is true
    install_hint: str = ""

    @classmethod
    def from_kubeconfig(cls, stanza: Mapping[str, Any], *, cwd: str,
                        cluster: Mapping[str, Any] | None) -> ExecPlugin:
        """Raise ValueError naming the field when the stanza is unusable."""
        command, api_version = stanza.get("command"), stanza.get("apiVersion")
        if not command or not isinstance(command, str):
            raise ValueError("exec: 'command' is required")
        if api_version not in KNOWN_API_VERSIONS:
            raise ValueError(f"exec: apiVersion {api_version!r} is not one of {', '.join(KNOWN_API_VERSIONS)}")
        args = stanza.get("args") or []
        env = stanza.get("env") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("exec: 'args' must be a list of strings")
        if not isinstance(env, list) or not all(isinstance(e, Mapping) and "name" in e and "value" in e for e in env):
            raise ValueError("exec: 'env' must be a list of {name, value}")
        return cls(api_version=api_version, command=command, args=tuple(args),
                   env=tuple((str(e["name"]), str(e["value"])) for e in env), cwd=cwd,
                   cluster=dict(cluster) if stanza.get("provideClusterInfo") and cluster else None,
                   install_hint=str(stanza.get("installHint") or ""))

    def run(self) -> dict[str, Any]:
        """Blocking: the plugin's `status` (call from a worker thread)."""
        # Imported here: `import kubernetes` loads the whole generated client (0.2-2 s); a pod
        # using its service account never pays for it.
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.exec_provider import ExecProvider
        from kubernetes.config.kube_config import ConfigNode

        exec_config = {"command": self.command, "apiVersion": self.api_version, "args": list(self.args),
                       "env": [{"name": k, "value": v} for k, v in self.env],
                       "provideClusterInfo": self.cluster is not None}
        node = ConfigNode("exec", exec_config)  # type: ignore[no-untyped-call]
        cluster = None if self.cluster is None else ConfigNode("cluster", dict(self.cluster))  # type: ignore[no-untyped-call]
        try:
            status = ExecProvider(node, self.cwd, cluster).run()  # type: ignore[no-untyped-call]
        except (ConfigException, OSError) as err:
            hint = f" ({self.install_hint.strip()})" if self.install_hint and isinstance(err, OSError) else ""
            raise ExecPluginError(f"exec plugin {self.command!r}: {err}{hint}") from None
        if not isinstance(status, dict):
            raise ExecPluginError(f"exec plugin {self.command!r}: status is not an object")
        return status


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecCredential:
    token: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    expires_at: float | None = None  # epoch seconds; None: until the server says 401


def credential_from_status(status: Mapping[str, Any], command: str, scratch: str) -> ExecCredential:
    """The ExecCredential `status` as our value; certificate and key go to 0600 files in `scratch`."""
    expires_at = None
    if status.get("expirationTimestamp"):
        try:
            expires_at = kubetime.parse_time(str(status["expirationTimestamp"]))
        except kubetime.TimeError:
            raise ExecPluginError(f"exec plugin {command!r}: expirationTimestamp "
                                  f"{status['expirationTimestamp']!r} is not an RFC 3339 time") from None
    token = status.get("token")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if token:
        return ExecCredential(token=str(token), expires_at=expires_at)
    if cert and key:
        return ExecCredential(client_cert_file=_private_file(scratch, ".crt", str(cert)),
                              client_key_file=_private_file(scratch, ".key", str(key)), expires_at=expires_at)
    if cert or key:
        raise ExecPluginError(f"exec plugin {command!r}: clientCertificateData and clientKeyData must both be set")
    raise ExecPluginError(f"exec plugin {command!r}: status has neither token nor clientCertificateData")


def _private_file(directory: str, suffix: str, content: str) -> str:
    fd, name = tempfile.mkstemp(dir=directory, suffix=suffix)  # mkstemp: mode 0600
    with os.fdopen(fd, "w") as handle:
        handle.write(content)
    return name


class ExecCredentials:
    """The current credential of one plugin; `current()` runs the plugin only when needed."""

    def __init__(self, plugin: ExecPlugin, *, clock: Callable[[], float] = time.time) -> None:
        self.plugin = plugin
        self._clock = clock  # wall clock: expirationTimestamp is wall time
        self._credential: ExecCredential | None = None
        self._running: asyncio.Task[ExecCredential] | None = None
        self._scratch = tempfile.mkdtemp(prefix="kube-exec-")
        self.runs = 0  # how many times the plugin ran (for tests and logs)

    def _valid(self, credential: ExecCredential | None) -> bool:
        if credential is None:
            return False
        return credential.expires_at is None or credential.expires_at - _EXPIRY_MARGIN_SECONDS > self._clock()

    async def current(self) -> ExecCredential:
        """A credential that has not expired; raises ExecPluginError when the plugin fails."""
        if self._valid(self._credential):
            assert self._credential is not None
            return self._credential
        if self._running is None:
            self._running = asyncio.ensure_future(self._refresh())
        task = self._running
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and self._running is task:
                self._running = None

    def invalidate(self, rejected: ExecCredential) -> None:
        """The server answered 401 to `rejected`: the next `current()` runs the plugin again."""
        if self._credential is rejected:
            self._credential = None

    async def _refresh(self) -> ExecCredential:
        self.runs += 1
        status = await asyncio.to_thread(self.plugin.run)
        self._credential = credential_from_status(status, self.plugin.command, self._scratch)
        return self._credential
