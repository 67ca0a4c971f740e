"""kubeconfig `exec` credential plugins (aws eks get-token, gke-gcloud-auth-plugin, kubelogin, ...).

Job: run the plugin the way client-go does (`client.authentication.k8s.io/v1` or `v1beta1`
ExecCredential on stdout; `KUBERNETES_EXEC_INFO` in the environment, with the cluster as client-go
describes it when `provideClusterInfo` is set; kubeconfig `env` over ours; a command holding a `/`
resolved against the kubeconfig's directory) as an asyncio subprocess, so the event loop never
blocks and a plugin that hangs is stopped after `PLUGIN_TIMEOUT_SECONDS`; keep the credential
(bearer token, or client certificate and key written to 0600 files) until its
`expirationTimestamp` (minus a safety margin) or until the API server answers 401; one plugin run
at a time, shared by every request waiting for it.

Non-goals: interactive plugins that prompt (a server has no terminal: the plugin always gets
`interactive: false` and no stdin, and `interactiveMode: Always` is refused at load), the removed
`auth-provider` plugins (gcp, azure), HTTP (the client asks `ExecCredentials.current()`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubecommon import kubetime

__all__ = ["ExecCredential", "ExecCredentials", "ExecPlugin", "ExecPluginError"]

KNOWN_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
PLUGIN_TIMEOUT_SECONDS = 60.0  # client-go waits forever; a server must not
_EXPIRY_MARGIN_SECONDS = 10.0  # renew a little before the server would start refusing
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"
_STDERR_CHARS = 2000  # of a failing plugin's stderr, kept in the error


class ExecPluginError(RuntimeError):
    """The plugin could not be run or printed something that is not a usable ExecCredential."""


def exec_cluster_info(cluster: Mapping[str, Any], ca_pem: bytes | None) -> dict[str, Any]:
    """The ExecCredential `spec.cluster` client-go gives a plugin: the CA as data whether the
    kubeconfig named a file or inlined it, the `client.authentication.k8s.io/exec` extension as
    `config`, false and empty fields left out."""
    info: dict[str, Any] = {"server": str(cluster.get("server") or "")}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            info[key] = cluster[key]
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, Mapping) and extension.get("name") == _EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecPlugin:
    """A kubeconfig user's `exec` stanza, validated at load time."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold secrets: not in repr()
    cwd: str = ""  # the kubeconfig's directory: a command holding a `/` resolves against it
    cluster: Mapping[str, Any] | None = None  # spec.cluster, set when provideClusterInfo is true
    install_hint: str = ""

    @classmethod
    def from_kubeconfig(cls, stanza: Mapping[str, Any], *, cwd: str,
                        cluster: Mapping[str, Any] | None, ca_pem: bytes | None = None) -> ExecPlugin:
        """Raise ValueError naming the field when the stanza is unusable."""
        command, api_version = stanza.get("command"), stanza.get("apiVersion")
        if not command or not isinstance(command, str):
            raise ValueError("exec: 'command' is required")
        if api_version not in KNOWN_API_VERSIONS:
            raise ValueError(f"exec: apiVersion {api_version!r} is not one of {', '.join(KNOWN_API_VERSIONS)}")
        if stanza.get("interactiveMode") == "Always":
            raise ValueError(f"exec: plugin {command!r}: interactiveMode Always needs a terminal, which "
                             "this server never has; use a non-interactive login (interactiveMode Never)")
        if stanza.get("interactiveMode") not in (None, "", "Never", "IfAvailable"):
            raise ValueError(f"exec: interactiveMode {stanza['interactiveMode']!r} is not one of Never, "
                             "IfAvailable, Always")
        if not isinstance(stanza.get("provideClusterInfo", False), bool):
            raise ValueError("exec: 'provideClusterInfo' must be true or false")
        args = stanza.get("args") or []
        env = stanza.get("env") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("exec: 'args' must be a list of strings")
        if not isinstance(env, list) or not all(isinstance(e, Mapping) and "name" in e and "value" in e for e in env):
            raise ValueError("exec: 'env' must be a list of {name, value}")
        info = exec_cluster_info(cluster, ca_pem) if stanza.get("provideClusterInfo") and cluster else None
        return cls(api_version=api_version, command=command, args=tuple(args),
                   env=tuple((str(e["name"]), str(e["value"])) for e in env), cwd=cwd, cluster=info,
                   install_hint=str(stanza.get("installHint") or ""))

    def _environment(self) -> dict[str, str]:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = dict(self.cluster)
        info = {"kind": "ExecCredential", "apiVersion": self.api_version, "spec": spec}
        return {**os.environ, **dict(self.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}

    def _executable(self) -> str:
        if "/" in self.command and not os.path.isabs(self.command):
            return os.path.join(self.cwd or os.getcwd(), self.command)
        return self.command

    async def run(self, *, timeout: float = PLUGIN_TIMEOUT_SECONDS) -> dict[str, Any]:
        """The plugin's `status`; the plugin is stopped when it has not answered within `timeout`."""
        name = f"exec plugin {self.command!r}"
        try:
            process = await asyncio.create_subprocess_exec(
                self._executable(), *self.args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self._environment())
        except FileNotFoundError:
            hint = f": {self.install_hint.strip()}" if self.install_hint.strip() else ""
            raise ExecPluginError(f"{name} not found (is it installed and on PATH?){hint}") from None
        except OSError as err:
            raise ExecPluginError(f"{name} cannot be run: {err.strerror}") from None
        try:
            async with asyncio.timeout(timeout):
                stdout, stderr = await process.communicate()
        except TimeoutError:
            raise ExecPluginError(f"{name}: no answer within {timeout:g} s; stopped it") from None
        finally:
            if process.returncode is None:  # timed out or cancelled: no orphan left running
                process.kill()
                await asyncio.shield(process.wait())
        if process.returncode != 0:
            detail = stderr.decode(errors="replace").strip()[-_STDERR_CHARS:]
            raise ExecPluginError(f"{name} exited with status {process.returncode}"
                                  + (f": {detail}" if detail else ""))
        return self._status(stdout, name)

    def _status(self, stdout: bytes, name: str) -> dict[str, Any]:
        try:
            doc = json.loads(stdout)
        except ValueError as err:
            raise ExecPluginError(f"{name}: output is not an ExecCredential (not JSON: {err})") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise ExecPluginError(f"{name}: output is not an ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise ExecPluginError(f"{name}: answered apiVersion {doc.get('apiVersion')!r}, the kubeconfig "
                                  f"asks for {self.api_version}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise ExecPluginError(f"{name}: status is not an object")
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


def _retrieve_exception(task: asyncio.Task[ExecCredential]) -> None:
    """Mark a failure as seen: waiters that timed out never read it, and asyncio would log it."""
    if not task.cancelled():
        task.exception()


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
        if self._running is None or self._running.done():  # done: every waiter gave up on it
            self._running = asyncio.ensure_future(self._refresh())
            self._running.add_done_callback(_retrieve_exception)
        task = self._running
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and self._running is task:
                self._running = None

    async def close(self) -> None:
        """Stop a plugin run still under way (its process is killed)."""
        running, self._running = self._running, None
        if running is not None and not running.done():
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    def invalidate(self, rejected: ExecCredential) -> None:
        """The server answered 401 to `rejected`: the next `current()` runs the plugin again."""
        if self._credential is rejected:
            self._credential = None

    async def _refresh(self) -> ExecCredential:
        self.runs += 1
        status = await self.plugin.run()
        self._credential = credential_from_status(status, self.plugin.command, self._scratch)
        return self._credential
