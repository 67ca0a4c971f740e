"""Authentication as kube-apiserver does it: client certificates, bearer tokens, anonymous.

Client certificates are verified by the TLS handshake against the cluster CA (`client-ca-file`);
user = CN, groups = O. Bearer tokens are the admin token of the kubeconfig and service-account
tokens minted through `serviceaccounts/<name>/token` (TokenRequest), valid while the service
account exists and the token has not expired. An invalid credential is a 401, no credential is
`system:anonymous`. X-Remote-* headers are never trusted here: the stand-in is the front door.
Non-goals: OIDC, webhook token authentication, bootstrap tokens.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kubecommon.status import Unauthorized

from .rbac import ANONYMOUS, UserInfo

AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceAccountToken:
    namespace: str
    name: str
    uid: str
    expires: float  # epoch seconds


def with_authenticated(user: UserInfo) -> UserInfo:
    if user.name == ANONYMOUS.name or AUTHENTICATED in user.groups \
            or "system:unauthenticated" in user.groups:
        return user
    return UserInfo(name=user.name, uid=user.uid, groups=user.groups + (AUTHENTICATED,),
                    extra=user.extra)


def service_account_user(namespace: str, name: str, uid: str) -> UserInfo:
    return UserInfo(name=f"system:serviceaccount:{namespace}:{name}", uid=uid,
                    groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                            AUTHENTICATED))


class Authenticator:
    def __init__(self, *, static_tokens: Mapping[str, UserInfo],
                 service_account_uid: Callable[[str, str], str | None],
                 clock: Callable[[], float]) -> None:
        self._static = dict(static_tokens)
        self._sa_tokens: dict[str, ServiceAccountToken] = {}
        self._sa_uid = service_account_uid
        self._clock = clock

    def issue_token(self, namespace: str, name: str, uid: str, expiration_seconds: int) -> tuple[str, float]:
        token = "standin-sa." + secrets.token_urlsafe(32)
        expires = self._clock() + expiration_seconds
        self._sa_tokens[token] = ServiceAccountToken(namespace=namespace, name=name, uid=uid,
                                                     expires=expires)
        return token, expires

    def review_token(self, token: str) -> UserInfo | None:
        """TokenReview semantics: the user a token stands for, or None."""
        user = self._static.get(token)
        if user is not None:
            return with_authenticated(user)
        sa = self._sa_tokens.get(token)
        if sa is None or sa.expires < self._clock() or self._sa_uid(sa.namespace, sa.name) != sa.uid:
            return None
        user = service_account_user(sa.namespace, sa.name, sa.uid)
        return UserInfo(name=user.name, uid=user.uid, groups=user.groups, extra={
            "authentication.kubernetes.io/credential-id": (
                "JTI=" + hashlib.sha256(token.encode()).hexdigest()[:32],)})

    def authenticate(self, headers: Mapping[str, str], peer_cert: Mapping[str, Any] | None) -> UserInfo:
        auth = headers.get("Authorization", "")
        if auth:
            scheme, _, rest = auth.strip().partition(" ")
            token = rest.strip().split(" ")[0] if scheme.lower() == "bearer" else ""
            user = self.review_token(token) if token else None
            if user is None:
                raise Unauthorized()
            return user
        if peer_cert:
            user = _user_from_cert(peer_cert)
            if user is not None:
                return with_authenticated(user)
            raise Unauthorized()
        return ANONYMOUS


def _user_from_cert(cert: Mapping[str, Any]) -> UserInfo | None:
    cn, orgs = "", []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                orgs.append(value)
    if not cn:
        return None
    return UserInfo(name=cn, groups=tuple(orgs))
