"""Delegated authentication: the k8s.io/apiserver authenticator chain (spec §1.3–§1.8).

Order: (1) front-proxy client certificate issued by the requestheader CA with an allowed CN →
identity from X-Remote-User/Group/Extra-*; (2) client certificate from the client CA → CN/O;
(3) bearer token → TokenReview. The first success wins and gets `system:authenticated`; if none
succeeded but one failed (bad certificate, CN not allowed, rejected token) → 401; with no
credentials at all → `system:anonymous` (authorization then decides).

Identity headers are read ONLY after the front-proxy certificate checks passed; on any other
connection they are ignored.

Non-goals: the TLS handshake (serving.py), authorization (authz.py), HTTP rendering.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol
from urllib.parse import unquote

from cryptography import x509
from multidict import CIMultiDictProxy, MultiMapping

from adapter.kube.authconfig import AuthMaterial
from kubecommon.kube.errors import KubeError
from kubecommon.kube.identity import ANONYMOUS, UserInfo, bearer_token
from kubecommon.kube.reviews import TokenResult
from kubecommon.kube.ttlcache import TTLCache
from kubecommon.status import Unauthorized
from kubecommon.tls import certificate_subject, load_pem_certificates, verify_chain

__all__ = ["AuthnSettings", "Authenticator", "RequestHeaderSettings", "merge_settings"]

_log = logging.getLogger(__name__)
DEFAULT_USERNAME_HEADERS = ("X-Remote-User",)
DEFAULT_GROUP_HEADERS = ("X-Remote-Group",)
DEFAULT_EXTRA_PREFIXES = ("X-Remote-Extra-",)


class TokenReviewerLike(Protocol):
    async def review(self, token: str) -> TokenResult: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeaderSettings:
    ca_pem: bytes
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES
    uid_headers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthnSettings:
    requestheader: RequestHeaderSettings | None = None
    client_ca_pem: bytes = b""

    def trusted_ca_bundle(self) -> bytes:
        """What the TLS handshake verifies client certificates against (union of both CAs)."""
        parts = [self.requestheader.ca_pem if self.requestheader else b"", self.client_ca_pem]
        return b"\n".join(p.strip() for p in parts if p.strip())


def merge_settings(flags: AuthMaterial, cluster: AuthMaterial | None) -> AuthnSettings:
    """Flags first; the ConfigMap fills what the flags leave unset."""
    c = cluster or AuthMaterial()
    if flags.requestheader_ca_pem:
        source_ca, source = flags.requestheader_ca_pem, flags
    else:
        source_ca, source = c.requestheader_ca_pem, c
    requestheader = None
    if source_ca.strip():
        requestheader = RequestHeaderSettings(
            ca_pem=source_ca,
            allowed_names=source.allowed_names,
            username_headers=source.username_headers or DEFAULT_USERNAME_HEADERS,
            group_headers=source.group_headers or DEFAULT_GROUP_HEADERS,
            extra_prefixes=source.extra_prefixes or DEFAULT_EXTRA_PREFIXES,
            uid_headers=source.uid_headers,
        )
    return AuthnSettings(requestheader=requestheader,
                         client_ca_pem=flags.client_ca_pem or c.client_ca_pem)


class _Failed(Exception):
    """One authenticator rejected presented credentials."""


class Authenticator:
    """The chain. `settings` is replaced (not mutated) when the cluster's auth ConfigMap changes."""

    def __init__(self, settings: AuthnSettings, token_reviewer: TokenReviewerLike | None, *,
                 clock: Callable[[], float] = time.monotonic, verdict_ttl: float = 60.0,
                 wall_clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc)) -> None:
        self.settings = settings
        self._tokens = token_reviewer
        self._clock = clock
        self._wall_clock = wall_clock
        self._verdict_ttl = verdict_ttl
        # Chain verification costs ~0.3 ms (signature check, PEM parsing); the aggregator sends
        # the same front-proxy certificate on every request, so verdicts are remembered briefly.
        self._verdicts: TTLCache[tuple[bytes, bytes], tuple[bool, str, tuple[str, ...]]] = TTLCache(1024)

    def _verify(self, der: bytes, ca_pem: bytes) -> tuple[bool, str, tuple[str, ...]]:
        """(chains to a CA in ca_pem with clientAuth, CN, organizations), cached per (cert, bundle)."""
        key = (der, ca_pem)
        now = self._clock()
        verdict = self._verdicts.get(key, now=now)
        if verdict is None:
            wall = self._wall_clock()
            ttl = self._verdict_ttl
            try:
                common_name, organizations = certificate_subject(der)
                verdict = (verify_chain(der, ca_pem, now=wall), common_name, organizations)
                if verdict[0]:  # a trusted verdict must not outlive the certificate (or its CA)
                    ttl = min(ttl, _seconds_valid(der, ca_pem, wall))
            except ValueError:
                verdict = (False, "", ())
            self._verdicts.put(key, verdict, expires_at=now + ttl)
        return verdict

    async def authenticate(self, *, peer_cert_der: bytes | None,
                           headers: CIMultiDictProxy[str] | MultiMapping[str]) -> UserInfo:
        errors: list[str] = []
        for step in (self._front_proxy, self._client_cert):
            try:
                user = step(peer_cert_der, headers)
            except _Failed as err:
                errors.append(str(err))
                continue
            if user is not None:
                return user.with_authenticated_group()
        try:
            user = await self._bearer(headers)
        except _Failed as err:
            errors.append(str(err))
            user = None
        if user is not None:
            return user.with_authenticated_group()
        if errors:
            _log.info("authentication failed: %s", "; ".join(errors))
            raise Unauthorized()
        return ANONYMOUS

    def _front_proxy(self, der: bytes | None, headers: MultiMapping[str]) -> UserInfo | None:
        settings = self.settings.requestheader
        if settings is None or der is None:
            return None
        trusted, common_name, _ = self._verify(der, settings.ca_pem)
        if not trusted:
            raise _Failed("front-proxy: certificate not signed by the requestheader CA")
        if settings.allowed_names and common_name not in settings.allowed_names:
            raise _Failed(f"x509: subject with cn={common_name} is not in the allowed list")
        name = _first(headers, settings.username_headers)
        if not name:
            return None
        groups = tuple(v for h in settings.group_headers for v in headers.getall(h, []) if v)
        return UserInfo(name=name, uid=_first(headers, settings.uid_headers), groups=groups,
                        extra=_extra(headers, settings.extra_prefixes))

    def _client_cert(self, der: bytes | None, headers: MultiMapping[str]) -> UserInfo | None:
        ca = self.settings.client_ca_pem
        if not ca.strip() or der is None:
            return None
        trusted, common_name, organizations = self._verify(der, ca)
        if not trusted:
            raise _Failed("x509: certificate signed by unknown authority")
        if not common_name:
            raise _Failed("x509: certificate has no common name")
        credential = "X509SHA256=" + hashlib.sha256(der).hexdigest()
        return UserInfo(name=common_name, groups=organizations,
                        extra=MappingProxyType({"authentication.kubernetes.io/credential-id": (credential,)}))

    async def _bearer(self, headers: MultiMapping[str]) -> UserInfo | None:
        token = bearer_token(headers.get("Authorization", ""))
        if token is None:
            return None
        if self._tokens is None:
            raise _Failed("bearer: token authentication is not configured")
        try:
            result = await self._tokens.review(token)
        except KubeError as err:
            _log.warning("TokenReview failed: %s", err)
            raise _Failed("bearer: token review unavailable") from None
        if not result.authenticated or result.user is None:
            raise _Failed(f"bearer: {result.error or 'token rejected'}")
        return result.user


def _seconds_valid(der: bytes, ca_pem: bytes, wall: dt.datetime) -> float:
    """Seconds until the leaf, or the first still-valid CA of the bundle, expires."""
    ends = [x509.load_der_x509_certificate(der).not_valid_after_utc]
    ends += [ca.not_valid_after_utc for ca in load_pem_certificates(ca_pem) if ca.not_valid_after_utc >= wall]
    return (min(ends) - wall).total_seconds()


def _first(headers: MultiMapping[str], names: tuple[str, ...]) -> str:
    """k8s `headerValue`: per header name only its FIRST line counts (Go's `Header.Get`); the
    first name whose first line is non-empty wins. A later duplicate line never replaces an empty
    or missing first one."""
    for name in names:
        values = headers.getall(name, [])
        if values and values[0].strip():
            return values[0].strip()
    return ""


def _extra(headers: MultiMapping[str], prefixes: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
    """k8s `newExtra`: prefixes in order, then every header line whose name starts with the
    prefix (case-insensitively); key = rest of the name, lower-cased, then percent-decoded."""
    extra: dict[str, list[str]] = {}
    for prefix in (p.lower() for p in prefixes):
        for name, value in headers.items():
            lname = name.lower()
            if lname.startswith(prefix) and len(lname) > len(prefix):
                extra.setdefault(_unescape(lname[len(prefix):]), []).append(value)
    return MappingProxyType({k: tuple(v) for k, v in extra.items()})


# Go's url.PathUnescape fails (and k8s then keeps the raw key) on a `%` without two hex digits.
_BAD_ESCAPE = re.compile(r"%(?![0-9a-fA-F]{2})")


def _unescape(key: str) -> str:
    if _BAD_ESCAPE.search(key):
        return key
    # Go decodes any bytes; invalid UTF-8 then reaches the SAR JSON as U+FFFD (encoding/json)
    return unquote(key, errors="replace")
