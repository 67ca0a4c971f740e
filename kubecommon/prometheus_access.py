"""`PrometheusAccess`: how to reach and authenticate to a Prometheus-compatible API, as flags say it.

One set of fields for the adapter's Prometheus client (`adapter.prometheus.settings`) and the
controller's history reader (`controller.options.HistoryOptions`), which take the same flags
(`--prometheus-timeout`, `--prometheus-ca-file`, client TLS, bearer token file, basic auth,
extra headers), so a chart or a user passes one set of values to both binaries.

Non-goals: validating them (each binary's flag parser refuses bad combinations with its own flag
names), reading the files they name. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PrometheusAccess"]


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
