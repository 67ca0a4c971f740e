"""Where and how to reach the Kubernetes API: a kubeconfig file or the in-cluster service account.

Job: read kubeconfig files (a `KUBECONFIG`-style list of paths is merged as client-go's loader
merges it: missing and empty files skipped, the first file to name a cluster, context or user and
the first to set current-context win; relative paths resolve against the file that named them),
pick the current or named context, and turn cluster and user into a frozen `KubeConfig`: server,
CA, client certificate, token, token file (kept as a path: bound tokens rotate), basic auth,
insecure-skip-tls-verify, tls-server-name, an http(s) proxy-url (socks5 refused) or, without one,
the proxy the environment names for the server (HTTPS_PROXY/HTTP_PROXY/NO_PROXY read as client-go
reads them, proxy_env), impersonation (`as`, `as-groups`, ...), and an `exec`
credential plugin (`exec_auth.ExecPlugin`, run later by the client, without blocking the event
loop). Inline `*-data` certificates are written to 0600 files because
`ssl.SSLContext.load_cert_chain` only reads files. A server written without a scheme
(`10.0.0.1:6443`) is read as kubectl reads it: clientcmd decides on TLS before it has read the CA
or the credentials, so it is plain `http://`. A plain-http server, so written or `http://...`,
gets what kubectl gives it: neither the user's credentials (token, token file, basic auth, client
certificate, exec plugin, auth-provider: clientcmd applies them only to a TLS transport, so no
credential travels in clear text) nor the cluster's TLS settings, only impersonation and the proxy;
`unsent_credentials` names what was left out, for the client's start-up warning. Impersonating a
uid, groups or extra without `as` is refused, as kubectl refuses it. Also the in-cluster environment
(`KUBERNETES_SERVICE_HOST/PORT`, the service-account token and CA).

Non-goals: the removed `auth-provider` plugins (gcp, azure; rejected with a clear error), running
the exec plugin (exec_auth), HTTP. Called once at startup.
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import yaml

from kubecommon.kube.exec_auth import ExecPlugin
from kubecommon.kube.proxy_env import proxy_from_environment

__all__ = ["KubeConfig", "KubeConfigError", "in_cluster_config", "load_kube_config"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeConfigError(ValueError):
    """The kubeconfig cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeConfig:
    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    client_cert_file: str | None = None
    client_key_file: str | None = None
    # secrets stay out of repr(): a config in a log line or a traceback must not leak them
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None  # re-read periodically: bound tokens rotate
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls_server_name: str | None = None
    # the cluster's proxy-url, else the environment's proxy (http or https); in repr() without its password
    proxy_url: str | None = field(default=None, repr=False)
    impersonation: tuple[tuple[str, str], ...] = ()  # Impersonate-* headers from the user's `as*`
    exec_plugin: ExecPlugin | None = None  # run by the client when it needs a credential
    # the user's credentials not used because the server is plain http ("token", "exec plugin", ...)
    unsent_credentials: tuple[str, ...] = ()
    source: str = ""

    def __repr__(self) -> str:
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr]
        if self.proxy_url:
            shown.append(f"proxy_url={_without_password(self.proxy_url)!r}")
        return f"KubeConfig({', '.join(shown)})"


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}").geturl()


_SECTIONS = ("clusters", "contexts", "users")
_Entries = dict[str, tuple[Mapping[str, Any], str]]  # name -> (entry, directory of its file)


def _merge_files(paths: list[str], source: str) -> tuple[dict[str, _Entries], str]:
    """client-go's merge of a kubeconfig list: missing and empty files are skipped, the first file
    naming a cluster, context or user wins it whole, the first non-empty current-context wins."""
    merged: dict[str, _Entries] = {section: {} for section in _SECTIONS}
    current = ""
    for name in paths:
        path = os.path.expanduser(name)
        try:
            doc = yaml.safe_load(Path(path).read_text())
        except FileNotFoundError:
            continue
        except (OSError, yaml.YAMLError) as err:
            raise KubeConfigError(f"{path}: cannot read kubeconfig: {err}") from None
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise KubeConfigError(f"{path}: not a kubeconfig (expected a mapping)")
        directory = os.path.dirname(os.path.abspath(path))
        for section in _SECTIONS:
            for entry in doc.get(section) or ():
                if not isinstance(entry, Mapping) or not entry.get("name"):
                    raise KubeConfigError(f"{path}: every entry of {section} needs a name")
                merged[section].setdefault(str(entry["name"]), (entry, directory))
        current = current or str(doc.get("current-context") or "")
    return merged, current


def _named(merged: Mapping[str, _Entries], section: str, name: str, source: str) -> tuple[Mapping[str, Any], str]:
    """(entry body, directory of the file that defined it) for `name` in `section`."""
    what = section[:-1]
    if name not in merged[section]:
        raise KubeConfigError(f"{source}: no {what} named {name!r}")
    entry, directory = merged[section][name]
    inner = entry.get(what) or {}
    if not isinstance(inner, Mapping):
        raise KubeConfigError(f"{source}: {what} {name!r} is not a mapping")
    return inner, directory


def load_kube_config(path: str | Path, *, context: str | None = None,
                     env: Mapping[str, str] | None = None) -> KubeConfig:
    """Read a kubeconfig file (or a `:`-separated list, merged) into a `KubeConfig`; `env` (default:
    this process's environment) names the proxy when the cluster has no proxy-url."""
    source = str(path)
    paths = [p for p in source.split(os.pathsep) if p]
    missing = [p for p in paths if not os.path.exists(os.path.expanduser(p))]
    if not paths or len(missing) == len(paths):
        raise KubeConfigError(f"{source}: cannot read kubeconfig: no such file")
    merged, current = _merge_files(paths, source)
    ctx_name = context or current
    if not ctx_name:
        raise KubeConfigError(f"{source}: no current-context and no --context given")
    ctx, _ = _named(merged, "contexts", ctx_name, source)
    cluster, cluster_dir = _named(merged, "clusters", str(ctx.get("cluster", "")), source)
    user, user_dir = _named(merged, "users", str(ctx["user"]), source) if ctx.get("user") else ({}, cluster_dir)
    # Imported here: `import kubernetes` loads the whole generated client (0.2-2 s); in-cluster
    # configuration, the production path, never needs it.
    from kubernetes.config.config_exception import ConfigException

    try:
        return _build(cluster, cluster_dir, user, user_dir, source, cluster_name=str(ctx.get("cluster", "")),
                      user_name=str(ctx.get("user", "")), env=os.environ if env is None else env)
    except (OSError, ValueError, ConfigException) as err:
        if isinstance(err, KubeConfigError):
            raise
        raise KubeConfigError(f"{source}: {err}") from None


def _file_or_data(obj: Mapping[str, Any], key: str, base: str, scratch: str) -> str | None:
    """The path of `key` (relative to `base`) or of a 0600 file holding the base64 `key-data`."""
    from kubernetes.config.kube_config import FileOrData  # see load_kube_config

    found = FileOrData(obj, key, file_base_path=base, temp_file_path=scratch).as_file()  # type: ignore[no-untyped-call]
    return str(found) if found else None


def _ca_pem(cluster: Mapping[str, Any], cluster_dir: str, where: str) -> bytes | None:
    """The cluster's CA bundle (inline data wins over a file, as in client-go), checked to hold PEM
    certificates so a wrong value is named here rather than failing the first connection."""
    if cluster.get("certificate-authority-data"):
        try:
            pem = base64.b64decode(str(cluster["certificate-authority-data"]), validate=True)
        except ValueError:
            raise KubeConfigError(f"{where}: certificate-authority-data is not base64") from None
        origin = "certificate-authority-data"
    elif cluster.get("certificate-authority"):
        path = os.path.join(cluster_dir, str(cluster["certificate-authority"]))
        pem, origin = Path(path).read_bytes(), f"certificate-authority {path}"
    else:
        return None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise KubeConfigError(f"{where}: {origin} holds no PEM certificate")
    return pem


def _impersonation(user: Mapping[str, Any], where: str, user_name: str) -> tuple[tuple[str, str], ...]:
    """The `Impersonate-*` headers kubectl sends for the user's `as`, `as-uid`, `as-groups` and
    `as-user-extra` (extra keys escaped as client-go escapes them); the others without `as` are
    refused, as kubectl's validation refuses them (the API server would too)."""
    if not user.get("as"):
        if user.get("as-uid") or user.get("as-groups") or user.get("as-user-extra"):
            raise KubeConfigError(f"{where}: requesting uid, groups or user-extra for user {user_name!r} without "
                                  "impersonating a user; add `as: <user name>`")
        return ()
    headers = [("Impersonate-User", str(user["as"]))]
    if user.get("as-uid"):
        headers.append(("Impersonate-Uid", str(user["as-uid"])))
    headers += [("Impersonate-Group", str(group)) for group in user.get("as-groups") or ()]
    for key, values in (user.get("as-user-extra") or {}).items():
        headers += [(f"Impersonate-Extra-{quote(str(key), safe='')}", str(value)) for value in values or ()]
    return tuple(headers)


def _proxy(server: str, cluster: Mapping[str, Any], env: Mapping[str, str], source: str) -> str | None:
    """The cluster's proxy-url, else the proxy `env` names for `server` (as client-go: a proxy-url
    wins, NO_PROXY and all); only http and https proxies, as aiohttp speaks no socks5."""
    proxy_url = str(cluster.get("proxy-url") or "") or None
    if proxy_url:
        origin = f"proxy-url {proxy_url}"
    elif (found := proxy_from_environment(server, env)) is not None:
        proxy_url, origin = found.url, f"{found.variable}={found.url}"
    if proxy_url and not proxy_url.lower().startswith(("http://", "https://")):
        raise KubeConfigError(f"{source}: {origin}: only http and https proxies are supported (kubectl also "
                              "takes socks5); name the cluster's host in NO_PROXY or give the cluster an "
                              "http proxy-url")
    return proxy_url


def _server_url(server: str, where: str) -> str:
    """The URL of a cluster's server, as client-go reads it: a host or host:port without a scheme
    is http:// (DefaultServerURL with no TLS settings yet)."""
    scheme, sep, rest = server.partition("://")
    if sep and scheme and rest:
        if scheme.lower() not in ("http", "https"):
            raise KubeConfigError(f"{where}: server {server}: only http and https servers are supported")
        return f"{scheme.lower()}://{rest}".rstrip("/")
    url = "http://" + server
    parts = urlsplit(url)
    try:
        _ = parts.port  # raises on a port that is no number
    except ValueError:
        raise KubeConfigError(f"{where}: server {server}: the port is not a number") from None
    if not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise KubeConfigError(f"{where}: server {server!r}: host must be a URL or a host:port pair")
    return url.rstrip("/")


def _one_password_or_token(user: Mapping[str, Any], where: str, user_name: str) -> None:
    """kubectl refuses a user with both a bearer token and basic auth (whichever it would send, the
    file is wrong), over http too: clientcmd's validation for an inline token, the transport's
    for a token file. A client certificate or exec plugin may come with either."""
    basic = bool(user.get("username") or user.get("password"))
    if basic and user.get("token"):
        raise KubeConfigError(f"{where}: more than one authentication method found for {user_name}; found "
                              "[token basicAuth], only one is allowed")
    if basic and user.get("tokenFile"):
        raise KubeConfigError(f"{where}: user {user_name!r}: username/password or bearer token may be set, "
                              "but not both")


def _credentials(user: Mapping[str, Any]) -> tuple[str, ...]:
    """The kinds of credential a kubeconfig user holds, as its keys name them."""
    kinds = (("token", ("token",)), ("tokenFile", ("tokenFile",)), ("username/password", ("username", "password")),
             ("client certificate", ("client-certificate", "client-certificate-data", "client-key",
                                     "client-key-data")),
             ("exec plugin", ("exec",)), ("auth-provider", ("auth-provider",)))
    return tuple(kind for kind, keys in kinds if any(user.get(key) for key in keys))


def _build(cluster: Mapping[str, Any], cluster_dir: str, user: Mapping[str, Any], user_dir: str,
           source: str, *, cluster_name: str, user_name: str, env: Mapping[str, str]) -> KubeConfig:
    if not cluster.get("server"):
        raise KubeConfigError(f"{source}: cluster has no server")
    server = _server_url(str(cluster["server"]), f"{source}: cluster {cluster_name!r}")
    _one_password_or_token(user, source, user_name)
    impersonation = _impersonation(user, source, user_name)
    unsent: tuple[str, ...] = ()
    if not server.startswith("https://"):  # clientcmd: credentials and TLS settings only over TLS
        unsent = _credentials(user)
        user, cluster = {}, {key: value for key, value in cluster.items() if key == "proxy-url"}
    if "auth-provider" in user:
        raise KubeConfigError(f"{source}: user {user_name!r} uses an auth-provider plugin, which client-go "
                              "removed; use an exec plugin, a token, token file or client certificate")
    ca_pem = _ca_pem(cluster, cluster_dir, f"{source}: cluster {cluster_name!r}")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):  # kubectl refuses the file; a quoted "false" is truthy
        raise KubeConfigError(f"{source}: cluster {cluster_name!r}: insecure-skip-tls-verify must be true or "
                              f"false, not {insecure!r}")
    proxy_url = _proxy(server, cluster, env, source)
    has_cert = bool(user.get("client-certificate") or user.get("client-certificate-data"))
    if has_cert != bool(user.get("client-key") or user.get("client-key-data")):
        half, other = ("client-certificate", "client-key") if has_cert else ("client-key", "client-certificate")
        raise KubeConfigError(f"{source}: user {user_name!r}: {half} needs {other} or {other}-data")
    scratch = tempfile.mkdtemp(prefix="kubeconfig-")  # 0700: inline keys land in 0600 files here
    token_file = os.path.join(user_dir, user["tokenFile"]) if user.get("tokenFile") else None
    if token_file and not user.get("token"):
        try:  # client-go reads it at load when there is no token: a wrong path fails here
            Path(token_file).read_bytes()
        except OSError as err:
            raise KubeConfigError(f"{source}: tokenFile {token_file}: {err.strerror}") from None
    exec_plugin = None
    if user.get("exec"):
        exec_plugin = ExecPlugin.from_kubeconfig(user["exec"], cwd=user_dir, cluster=cluster, ca_pem=ca_pem)
    return KubeConfig(
        server=server, ca_pem=ca_pem,
        insecure=insecure,
        client_cert_file=_file_or_data(user, "client-certificate", user_dir, scratch),
        client_key_file=_file_or_data(user, "client-key", user_dir, scratch),
        token=user.get("token") or None,
        token_file=token_file,
        username=user.get("username"), password=user.get("password"),
        tls_server_name=cluster.get("tls-server-name"), proxy_url=proxy_url,
        impersonation=impersonation, exec_plugin=exec_plugin, unsent_credentials=unsent, source=source,
    )


def in_cluster_config(env: Mapping[str, str], *, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> KubeConfig:
    """The service-account configuration a pod gets (same rules as client-go InClusterConfig)."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError("not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); "
                              "pass --kubeconfig")
    token_file, ca_file = sa_dir / "token", sa_dir / "ca.crt"
    if not token_file.exists():
        raise KubeConfigError(f"in-cluster: {token_file} does not exist")
    try:  # read now, as client-go does: a token the pod cannot read fails at start, not per request
        token_file.read_bytes()
        ca_pem = ca_file.read_bytes() if ca_file.exists() else None
    except OSError as err:
        raise KubeConfigError(f"in-cluster: cannot read {err.filename}: {err.strerror}") from None
    host = f"[{host}]" if ":" in host else host
    server = f"https://{host}:{port}"
    return KubeConfig(server=server, ca_pem=ca_pem, token_file=str(token_file),
                      proxy_url=_proxy(server, {}, env, "in-cluster"), source="in-cluster")
