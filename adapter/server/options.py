"""The server's own flags: secure serving and delegated authentication/authorization, named like
k8s.io/apiserver's, and their validation into a frozen `ServingOptions`.

Every flag error names the flag (`OptionsError`). The binary's command line
(`adapter.options`) adds these groups to its parser and nests the result as `ServeOptions.serving`.

Non-goals: whole-binary flags (the rule file, Kubernetes and Prometheus access, logging:
`adapter.options`); starting anything (adapter.app); reading files other than the CA bundles
named here.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from adapter.kube.authconfig import AuthMaterial
from adapter.prometheus import settings as prom_settings
from adapter.server.authz import DEFAULT_ALWAYS_ALLOW_PATHS

__all__ = [
    "OptionsError", "ServingOptions", "add_auth_flags", "add_serving_flags", "duration_arg",
    "serving_options_from_args",
]


class OptionsError(ValueError):
    """A flag value is unusable; the message starts with the flag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingOptions:
    bind_address: str
    secure_port: int
    max_inflight: int
    shutdown_delay: float
    tls_cert_file: Path | None
    tls_key_file: Path | None
    cert_dir: Path
    tls_min_version: str
    tls_reload_interval: float
    service_name: str | None
    service_namespace: str | None
    authentication_kubeconfig: str | None
    authorization_kubeconfig: str | None
    authn_flags: AuthMaterial
    skip_lookup: bool
    token_cache_ttl: float
    authorized_ttl: float
    unauthorized_ttl: float
    review_cache_size: int
    always_allow_paths: tuple[str, ...]
    insecure_disable_auth: bool
    anonymous_auth: bool


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def add_serving_flags(parser: argparse.ArgumentParser) -> None:
    """The secure-serving flag group."""
    serving = parser.add_argument_group("Secure serving")
    serving.add_argument("--bind-address", default="0.0.0.0")
    serving.add_argument("--secure-port", type=int, default=6443)
    serving.add_argument("--tls-cert-file", default="")
    serving.add_argument("--tls-private-key-file", default="")
    serving.add_argument("--cert-dir", default="apiserver.local.config/certificates",
                         help="where a self-signed certificate is kept when --tls-cert-file is not given")
    serving.add_argument("--shutdown-delay-duration", default="0s",
                         help="after SIGTERM, report not-ready but keep serving this long before stopping")
    serving.add_argument("--max-requests-inflight", type=int, default=400,
                         help="concurrent requests served before answering 429 (health probes excepted)")
    serving.add_argument("--tls-min-version", default="VersionTLS12", choices=("VersionTLS12", "VersionTLS13"))
    serving.add_argument("--tls-reload-interval", default="10s",
                         help="how often certificate files are checked for changes (extension)")
    serving.add_argument("--service-name", default=os.environ.get("SERVICE_NAME", ""),
                         help="Service name for the self-signed certificate's SANs (env SERVICE_NAME)")
    serving.add_argument("--service-namespace", default=os.environ.get("POD_NAMESPACE", ""),
                         help="Service namespace for the SANs (env POD_NAMESPACE)")


def add_auth_flags(parser: argparse.ArgumentParser) -> None:
    """The delegated authentication and authorization flag groups, and --insecure-disable-auth."""
    authn = parser.add_argument_group("Delegated authentication")
    authn.add_argument("--authentication-kubeconfig", default="",
                       help="kubeconfig for TokenReview and the auth ConfigMap (default: --kubeconfig)")
    authn.add_argument("--authentication-skip-lookup", action="store_true",
                       help="do not read kube-system/extension-apiserver-authentication")
    authn.add_argument("--authentication-token-webhook-cache-ttl", default="10s")
    authn.add_argument("--anonymous-auth", default="false", choices=("true", "false"),
                       help="serve requests without credentials as system:anonymous (then subject to "
                            "SubjectAccessReview) instead of answering 401; health paths never need credentials")
    authn.add_argument("--client-ca-file", default="")
    authn.add_argument("--requestheader-client-ca-file", default="")
    authn.add_argument("--requestheader-allowed-names", default="", help="comma-separated CNs")
    authn.add_argument("--requestheader-username-headers", default="")
    authn.add_argument("--requestheader-group-headers", default="")
    authn.add_argument("--requestheader-extra-headers-prefix", default="")
    authn.add_argument("--requestheader-uid-headers", default="")
    authz = parser.add_argument_group("Delegated authorization")
    authz.add_argument("--authorization-kubeconfig", default="",
                       help="kubeconfig for SubjectAccessReview (default: --kubeconfig)")
    authz.add_argument("--authorization-webhook-cache-authorized-ttl", default="10s")
    authz.add_argument("--authorization-webhook-cache-unauthorized-ttl", default="10s")
    authz.add_argument("--authorization-always-allow-paths", default=",".join(DEFAULT_ALWAYS_ALLOW_PATHS))
    authz.add_argument("--auth-cache-size", type=int, default=10_000,
                       help="maximum cached TokenReview and SubjectAccessReview answers each (extension)")
    parser.add_argument("--insecure-disable-auth", action="store_true",
                        help="DEVELOPMENT ONLY: serve every request without authentication or authorization")


def _read_ca(flag: str, path: str) -> bytes:
    if not path:
        return b""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise OptionsError(f"{flag}: cannot read {path}: {err.strerror}") from None
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise OptionsError(f"{flag}: {path} contains no PEM certificate")
    return data


def duration_arg(args: argparse.Namespace, name: str) -> float:
    """The Go duration in `args.<name>` in seconds; a bad or negative one names its flag."""
    flag = "--" + name.replace("_", "-")
    try:
        value = prom_settings.parse_duration(getattr(args, name), flag=flag)
    except ValueError as err:
        raise OptionsError(str(err)) from None
    if value < 0:
        raise OptionsError(f"{flag}: must not be negative")
    return value


def serving_options_from_args(args: argparse.Namespace, *, kubeconfig: str | None) -> ServingOptions:
    """Validate the server's flags; the review kubeconfigs default to `kubeconfig` (--kubeconfig)."""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise OptionsError("--tls-cert-file and --tls-private-key-file must be given together")
    if not 0 <= args.secure_port <= 65535:
        raise OptionsError(f"--secure-port: {args.secure_port} is not a port number")
    if args.max_requests_inflight < 1:
        raise OptionsError("--max-requests-inflight: must be at least 1")
    if args.auth_cache_size < 1:
        raise OptionsError("--auth-cache-size: must be at least 1")
    flags = AuthMaterial(
        client_ca_pem=_read_ca("--client-ca-file", args.client_ca_file),
        requestheader_ca_pem=_read_ca("--requestheader-client-ca-file", args.requestheader_client_ca_file),
        allowed_names=_csv(args.requestheader_allowed_names),
        username_headers=_csv(args.requestheader_username_headers),
        group_headers=_csv(args.requestheader_group_headers),
        extra_prefixes=_csv(args.requestheader_extra_headers_prefix),
        uid_headers=_csv(args.requestheader_uid_headers),
    )
    return ServingOptions(
        bind_address=args.bind_address, secure_port=args.secure_port,
        max_inflight=args.max_requests_inflight,
        shutdown_delay=duration_arg(args, "shutdown_delay_duration"),
        tls_cert_file=Path(args.tls_cert_file) if args.tls_cert_file else None,
        tls_key_file=Path(args.tls_private_key_file) if args.tls_private_key_file else None,
        cert_dir=Path(args.cert_dir), tls_min_version=args.tls_min_version,
        tls_reload_interval=max(0.2, duration_arg(args, "tls_reload_interval")),
        service_name=args.service_name or None, service_namespace=args.service_namespace or None,
        authentication_kubeconfig=args.authentication_kubeconfig or kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig or kubeconfig,
        authn_flags=flags, skip_lookup=args.authentication_skip_lookup,
        token_cache_ttl=duration_arg(args, "authentication_token_webhook_cache_ttl"),
        authorized_ttl=duration_arg(args, "authorization_webhook_cache_authorized_ttl"),
        unauthorized_ttl=duration_arg(args, "authorization_webhook_cache_unauthorized_ttl"),
        review_cache_size=args.auth_cache_size,
        always_allow_paths=_csv(args.authorization_always_allow_paths),
        insecure_disable_auth=args.insecure_disable_auth,
        anonymous_auth=args.anonymous_auth == "true",
    )
