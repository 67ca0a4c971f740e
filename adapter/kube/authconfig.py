"""The `kube-system/extension-apiserver-authentication` ConfigMap: trust material for clients.

Job: parse the ConfigMap kube-apiserver publishes (client CA, front-proxy CA, allowed names and
header names, values being JSON arrays in strings; spec §1.1) into a frozen value, and keep it
current through a watch restricted to that one object (`fieldSelector=metadata.name=...`, which
is what the `extension-apiserver-authentication-reader` Role allows). Listeners are told of
every change so new TLS handshakes and requests use the new material without a restart.

Non-goals: deciding precedence against command-line flags (adapter.server.authn does).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError
from kubecommon.kube.resources import ResourceInfo

__all__ = ["AUTH_CONFIGMAP", "AUTH_NAMESPACE", "AuthConfigWatcher", "AuthMaterial", "parse_auth_configmap"]

_log = logging.getLogger(__name__)
AUTH_NAMESPACE = "kube-system"
AUTH_CONFIGMAP = "extension-apiserver-authentication"
_CONFIGMAPS = ResourceInfo(group="", version="v1", resource="configmaps", kind="ConfigMap", namespaced=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthMaterial:
    """Client CAs and request-header settings, from flags or from the cluster ConfigMap.

    The same shape serves both sources so `merge_settings` can apply k8s.io/apiserver's rule: a set
    flag wins, the ConfigMap fills the rest.
    """

    client_ca_pem: bytes = b""
    requestheader_ca_pem: bytes = b""
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] = ()
    uid_headers: tuple[str, ...] = ()


#: What a malformed `requestheader-allowed-names` becomes: a name no certificate carries. An empty
#: list means "any certificate the front-proxy CA signed", so a value we cannot read must not
#: silently widen trust to that; the front proxy is refused until the ConfigMap is fixed.
UNMATCHABLE_NAME = "\x00(malformed requestheader-allowed-names)"


def _string_list(data: Mapping[str, str], key: str) -> tuple[str, ...] | None:
    """The JSON array of strings under `key`: () when absent or empty, None when malformed."""
    raw = (data.get(key) or "").strip()
    if not raw:
        return ()
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _log.error("%s/%s key %s is not a JSON array of strings: %r", AUTH_NAMESPACE, AUTH_CONFIGMAP, key, raw)
        return None
    return tuple(value)


def _headers(data: Mapping[str, str], key: str) -> tuple[str, ...]:
    """Header names: unreadable or empty ones fall back to the defaults (merge_settings)."""
    return tuple(name for name in _string_list(data, key) or () if name)


def parse_auth_configmap(data: Mapping[str, str]) -> AuthMaterial:
    """Decode the ConfigMap's data; absent keys mean "not configured"."""
    allowed = _string_list(data, "requestheader-allowed-names")
    return AuthMaterial(
        client_ca_pem=(data.get("client-ca-file") or "").encode(),
        requestheader_ca_pem=(data.get("requestheader-client-ca-file") or "").encode(),
        # kept as given (k8s compares the CN with each entry exactly, "" included)
        allowed_names=(UNMATCHABLE_NAME,) if allowed is None else allowed,
        username_headers=_headers(data, "requestheader-username-headers"),
        group_headers=_headers(data, "requestheader-group-headers"),
        extra_prefixes=_headers(data, "requestheader-extra-headers-prefix"),
        uid_headers=_headers(data, "requestheader-uid-headers"),
    )


class AuthConfigWatcher:
    """Reads the ConfigMap at start (failing loudly unless it simply does not exist), then watches."""

    def __init__(self, client: KubeClient, on_change: Callable[[AuthMaterial | None], None]) -> None:
        self._client = client
        self._on_change = on_change
        self._last: AuthMaterial | None = None
        self._cache = ObjectCache(client, _CONFIGMAPS, namespace=AUTH_NAMESPACE,
                                  field_selector=f"metadata.name={AUTH_CONFIGMAP}", keep_data=True,
                                  on_change=lambda _: self._refresh())

    @property
    def current(self) -> AuthMaterial | None:
        return self._last

    async def start(self) -> None:
        """First read is direct so RBAC or connectivity problems fail startup with their cause."""
        try:
            doc = await self._client.get(f"/api/v1/namespaces/{AUTH_NAMESPACE}/configmaps/{AUTH_CONFIGMAP}")
            self._publish(parse_auth_configmap(doc.get("data") or {}))
        except KubeAPIError as err:
            if err.code != 404:
                raise
            _log.warning("configmap %s/%s not found: front-proxy and client-certificate "
                         "authentication are off until it appears", AUTH_NAMESPACE, AUTH_CONFIGMAP)
        self._cache.start()

    async def stop(self) -> None:
        await self._cache.stop()

    def _refresh(self) -> None:
        obj = self._cache.get(AUTH_NAMESPACE, AUTH_CONFIGMAP)
        self._publish(parse_auth_configmap(obj.data) if obj is not None else None)

    def _publish(self, config: AuthMaterial | None) -> None:
        if config == self._last:
            return
        self._last = config
        _log.info("authentication configuration from %s/%s updated", AUTH_NAMESPACE, AUTH_CONFIGMAP)
        self._on_change(config)
