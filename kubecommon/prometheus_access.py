"""`PrometheusAccess`: how to reach and authenticate to a Prometheus-compatible API, as flags say it.

One set of fields for the adapter's Prometheus client (`adapter.prometheus.settings`) and the
controller's history reader (`controller.options.HistoryOptions`), which take the same flags
(`--prometheus-timeout`, `--prometheus-ca-file`, client TLS, bearer token file, basic auth,
extra headers), so a chart or a user passes one set of values to both binaries.

The two flag readings both binaries need are here too, so they cannot drift apart:
`parse_header` (a `--prometheus-header` value) and `in_cluster_files` (what
`--prometheus-auth-incluster` names).

Non-goals: the flags themselves and their combinations (each binary's flag parser refuses bad
combinations with its own flag names), reading the files they name. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SERVICE_ACCOUNT_DIR", "PrometheusAccess", "in_cluster_files", "parse_header"]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token


def parse_header(text: str) -> tuple[str, str]:
    """`Key=Value` as prometheus-adapter takes `--prometheus-header`: split on the first `=` (`Key`
    alone: an empty value). A name HTTP cannot carry, or a value on two lines (a header injected
    into the request), raises ValueError saying which."""
    key, _, value = text.partition("=")
    key = key.strip()
    if not _HEADER_NAME.fullmatch(key):
        raise ValueError(f"invalid header name in {text!r}")
    if "\n" in value or "\r" in value:
        raise ValueError(f"header {key!r} value has a newline")
    return key, value


def in_cluster_files(token_file: str | None, ca_file: str | None) -> tuple[str, str]:
    """`--prometheus-auth-incluster`: the pod's service-account token (re-read as it rotates) and
    the cluster CA, as upstream's in-cluster transport; files named by explicit flags win."""
    return token_file or f"{SERVICE_ACCOUNT_DIR}/token", ca_file or f"{SERVICE_ACCOUNT_DIR}/ca.crt"


@dataclass(frozen=True, slots=True, kw_only=True)
class PrometheusAccess:
    timeout: float = 30.0
    ca_file: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    insecure_skip_tls_verify: bool = False
    token_file: str | None = None
    basic_auth_username: str | None = None
    basic_auth_password_file: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
