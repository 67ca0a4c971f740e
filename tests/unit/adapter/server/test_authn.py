"""The delegated authenticator chain (spec §1.3–§1.8)."""

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from adapter.kube.authconfig import AuthMaterial
from kubecommon.kube.errors import KubeUnavailable
from kubecommon.kube.identity import UserInfo
from kubecommon.kube.reviews import TokenResult
from adapter.server.authn import Authenticator, merge_settings
from kubecommon.status import Unauthorized


class Tokens:
    """TokenReviewer stand-in: a dict of token -> user; 'down' raises like an unreachable API."""

    def __init__(self, users):
        self.users = users
        self.seen = []

    async def review(self, token):
        self.seen.append(token)
        if token == "down":
            raise KubeUnavailable("connection refused")
        user = self.users.get(token)
        return TokenResult(authenticated=user is not None, user=user, error="" if user else "invalid token")


def headers(*pairs):
    return CIMultiDictProxy(CIMultiDict(pairs))


IDENTITY = (("X-Remote-User", "bob"), ("X-Remote-Group", "team-a"), ("X-Remote-Group", "team,b"),
            ("X-Remote-Extra-Scopes", "s1"), ("X-Remote-Extra-Scopes", "s2"),
            ("X-Remote-Extra-Authentication.kubernetes.io%2fcredential-Id", "JTI=9"))


@pytest.fixture
def authenticator(pki):
    cluster = AuthMaterial(requestheader_ca_pem=pki.front_proxy_ca.cert_pem,
                                client_ca_pem=pki.client_ca.cert_pem, allowed_names=("front-proxy-client",),
                                username_headers=("X-Remote-User",), group_headers=("X-Remote-Group",),
                                extra_prefixes=("X-Remote-Extra-",))
    tokens = Tokens({"good": UserInfo(name="carol", groups=("readers",))})
    return Authenticator(merge_settings(AuthMaterial(), cluster), tokens)


async def test_front_proxy_identity_comes_from_headers(authenticator, pki):
    user = await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy), headers=headers(*IDENTITY))
    assert user.name == "bob"
    assert user.groups == ("team-a", "team,b", "system:authenticated")  # one group per line, no splitting
    assert dict(user.extra) == {"scopes": ("s1", "s2"), "authentication.kubernetes.io/credential-id": ("JTI=9",)}


async def test_identity_headers_ignored_without_front_proxy_cert(authenticator):
    user = await authenticator.authenticate(peer_cert_der=None, headers=headers(*IDENTITY))
    assert user.name == "system:anonymous"
    assert user.groups == ("system:unauthenticated",)


async def test_identity_headers_ignored_with_a_client_ca_cert(authenticator, pki):
    """A client-ca certificate authenticates as itself; it can never assert X-Remote-User."""
    user = await authenticator.authenticate(peer_cert_der=pki.der(pki.client_ca_as_proxy), headers=headers(*IDENTITY))
    assert user.name == "front-proxy-client"
    assert "team-a" not in user.groups


async def test_front_proxy_cn_not_allowed_is_401(authenticator, pki):
    with pytest.raises(Unauthorized):
        await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy_wrong_cn), headers=headers(*IDENTITY))


async def test_any_cn_allowed_when_allowed_names_empty(pki):
    cluster = AuthMaterial(requestheader_ca_pem=pki.front_proxy_ca.cert_pem)
    auth = Authenticator(merge_settings(AuthMaterial(), cluster), None)
    user = await auth.authenticate(peer_cert_der=pki.der(pki.front_proxy_wrong_cn), headers=headers(*IDENTITY))
    assert user.name == "bob"


async def test_front_proxy_without_username_falls_through_to_401(authenticator, pki):
    with pytest.raises(Unauthorized):
        await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy),
                                         headers=headers(("X-Remote-Group", "g")))


async def test_client_certificate_gives_cn_and_organizations(authenticator, pki):
    user = await authenticator.authenticate(peer_cert_der=pki.der(pki.alice), headers=headers())
    assert (user.name, user.groups) == ("alice", ("dev", "ops", "system:authenticated"))
    (credential,) = user.extra["authentication.kubernetes.io/credential-id"]
    assert credential.startswith("X509SHA256=") and len(credential) == len("X509SHA256=") + 64


async def test_untrusted_certificate_is_401(authenticator, pki):
    with pytest.raises(Unauthorized):
        await authenticator.authenticate(peer_cert_der=pki.der(pki.stranger), headers=headers())


@pytest.mark.parametrize("authorization, expected", [
    pytest.param("Bearer good", "carol", id="valid token"),
    pytest.param("bearer good", "carol", id="scheme is case-insensitive"),
    pytest.param("Bearer good extra-part", "carol", id="second part ignored"),
    pytest.param("Basic dXNlcjpwYXNz", "system:anonymous", id="other scheme is no credential"),
    pytest.param("Bearer ", "system:anonymous", id="empty token is no credential (k8s bearertoken)"),
    pytest.param("Bearer  good", "system:anonymous", id="two spaces: empty second part, no credential"),
    pytest.param("Bearer\tgood", "system:anonymous", id="only a space separates scheme and token"),
])
async def test_bearer_tokens(authenticator, authorization, expected):
    user = await authenticator.authenticate(peer_cert_der=None, headers=headers(("Authorization", authorization)))
    assert user.name == expected


@pytest.mark.parametrize("authorization", [
    pytest.param("Bearer bad", id="rejected token"),
    pytest.param("Bearer down", id="TokenReview unavailable"),
])
async def test_bad_tokens_are_401(authenticator, authorization):
    with pytest.raises(Unauthorized) as caught:
        await authenticator.authenticate(peer_cert_der=None, headers=headers(("Authorization", authorization)))
    assert caught.value.to_dict()["message"] == "Unauthorized"


async def test_token_user_gets_authenticated_group(authenticator):
    user = await authenticator.authenticate(peer_cert_der=None, headers=headers(("Authorization", "Bearer good")))
    assert user.groups == ("readers", "system:authenticated")


def test_flags_win_over_configmap(pki):
    flags = AuthMaterial(requestheader_ca_pem=pki.other_ca.cert_pem, allowed_names=("proxy",))
    cluster = AuthMaterial(requestheader_ca_pem=pki.front_proxy_ca.cert_pem, allowed_names=("x",),
                                client_ca_pem=pki.client_ca.cert_pem)
    settings = merge_settings(flags, cluster)
    assert settings.requestheader.ca_pem == pki.other_ca.cert_pem
    assert settings.requestheader.allowed_names == ("proxy",)
    assert settings.requestheader.username_headers == ("X-Remote-User",)  # upstream default
    assert settings.client_ca_pem == pki.client_ca.cert_pem  # not set by flag: from the ConfigMap
    assert pki.other_ca.cert_pem.strip() in settings.trusted_ca_bundle()
    assert pki.client_ca.cert_pem.strip() in settings.trusted_ca_bundle()


def test_no_requestheader_ca_means_no_front_proxy():
    assert merge_settings(AuthMaterial(), AuthMaterial()).requestheader is None


async def test_rotated_requestheader_ca_rejects_the_old_proxy_certificate(authenticator, pki):
    proxy = pki.der(pki.front_proxy)
    assert (await authenticator.authenticate(peer_cert_der=proxy, headers=headers(*IDENTITY))).name == "bob"
    authenticator.settings = merge_settings(AuthMaterial(), AuthMaterial(
        requestheader_ca_pem=pki.other_ca.cert_pem, client_ca_pem=pki.client_ca.cert_pem))
    with pytest.raises(Unauthorized):
        await authenticator.authenticate(peer_cert_der=proxy, headers=headers(*IDENTITY))


async def test_garbage_peer_certificate_is_401_not_500(authenticator):
    with pytest.raises(Unauthorized):
        await authenticator.authenticate(peer_cert_der=b"not a certificate", headers=headers(*IDENTITY))


@pytest.mark.parametrize("pairs, expected", [
    pytest.param((("X-Remote-User", "alice"), ("X-Remote-User", "mallory")), "alice",
                 id="first line wins over a later duplicate"),
    pytest.param((("x-remote-user", "alice"),), "alice", id="header name case-insensitive"),
    pytest.param((("X-Remote-User", ""), ("X-Remote-User", "mallory")), None,
                 id="an empty first line is no user (Go Header.Get), not the next line"),
])
async def test_username_header_is_read_like_go_header_get(authenticator, pki, pairs, expected):
    if expected is None:
        with pytest.raises(Unauthorized):  # no user from the proxy; its cert is no client-ca cert
            await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy), headers=headers(*pairs))
        return
    user = await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy), headers=headers(*pairs))
    assert user.name == expected


@pytest.mark.parametrize("header, key", [
    pytest.param("X-Remote-Extra-Authentication.kubernetes.io%2fcredential-Id",
                 "authentication.kubernetes.io/credential-id", id="lower-cased then decoded"),
    pytest.param("x-remote-extra-Scopes", "scopes", id="prefix case-insensitive"),
    pytest.param("X-Remote-Extra-A%zz%2F", "a%zz%2f", id="malformed escape keeps the raw key"),
    pytest.param("X-Remote-Extra-A%", "a%", id="trailing percent keeps the raw key"),
    pytest.param("X-Remote-Extra-A%ff", "a\ufffd", id="invalid UTF-8 decodes like Go then JSON"),
])
async def test_extra_keys_are_decoded_like_k8s(authenticator, pki, header, key):
    user = await authenticator.authenticate(peer_cert_der=pki.der(pki.front_proxy),
                                            headers=headers(("X-Remote-User", "bob"), (header, "v")))
    assert dict(user.extra) == {key: ("v",)}


async def test_extra_header_matching_two_prefixes_counts_for_both(pki):
    """k8s walks the prefixes in order and gives each matching header line to every prefix."""
    cluster = AuthMaterial(requestheader_ca_pem=pki.front_proxy_ca.cert_pem,
                           extra_prefixes=("X-Remote-Extra-", "X-Remote-Extra-Team-"))
    auth = Authenticator(merge_settings(AuthMaterial(), cluster), None)
    user = await auth.authenticate(peer_cert_der=pki.der(pki.front_proxy),
                                   headers=headers(("X-Remote-User", "bob"), ("X-Remote-Extra-Team-Id", "7")))
    assert dict(user.extra) == {"team-id": ("7",), "id": ("7",)}


async def test_malformed_allowed_names_in_the_configmap_refuse_the_front_proxy(pki):
    from adapter.kube.authconfig import parse_auth_configmap

    cluster = parse_auth_configmap({"requestheader-client-ca-file": pki.front_proxy_ca.cert_pem.decode(),
                                    "requestheader-allowed-names": "front-proxy-client"})  # not JSON
    auth = Authenticator(merge_settings(AuthMaterial(), cluster), None)
    with pytest.raises(Unauthorized):
        await auth.authenticate(peer_cert_der=pki.der(pki.front_proxy_wrong_cn), headers=headers(*IDENTITY))


class Clocks:
    """The authenticator's two clocks moved together: monotonic (cache) and wall (validity)."""

    def __init__(self, wall):
        self.wall, self.mono = wall, 1000.0

    def advance(self, seconds):
        import datetime as dt
        self.wall += dt.timedelta(seconds=seconds)
        self.mono += seconds


@pytest.mark.parametrize("later, expected", [
    pytest.param(20, "alice", id="still valid: the remembered verdict is used"),
    pytest.param(45, None, id="expired 15 s ago, within the verdict cache's 60 s: 401"),
])
async def test_a_certificate_that_expires_is_refused_at_once(pki, later, expected):
    """x509.Verify checks validity on every request; a remembered 'trusted' verdict must not
    outlive the certificate (it kept an expired certificate working for up to a minute)."""
    import datetime as dt

    from kubecommon import tls

    start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    # issue_certificate backdates one hour: valid from start-1d+30s to start+30s
    expiring = tls.issue_certificate(pki.client_ca, "alice", server=False, client=True, key_algorithm="ecdsa",
                                     now=start + dt.timedelta(hours=1, seconds=30) - dt.timedelta(days=1), days=1)
    clocks = Clocks(start)
    auth = Authenticator(merge_settings(AuthMaterial(client_ca_pem=pki.client_ca.cert_pem), None), None,
                         clock=lambda: clocks.mono, wall_clock=lambda: clocks.wall)
    assert (await auth.authenticate(peer_cert_der=pki.der(expiring), headers=headers())).name == "alice"
    clocks.advance(later)
    if expected is None:
        with pytest.raises(Unauthorized):
            await auth.authenticate(peer_cert_der=pki.der(expiring), headers=headers())
    else:
        assert (await auth.authenticate(peer_cert_der=pki.der(expiring), headers=headers())).name == expected


def _multi_cn_certificate(ca, common_names):
    """A client certificate whose subject carries several CN attributes, in this order."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn) for cn in common_names]))
            .issuer_name(ca.certificate.subject).public_key(ec.generate_private_key(ec.SECP256R1()).public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


@pytest.mark.parametrize("ca_name, common_names, expected", [
    pytest.param("client_ca", ("system:admin", "alice"), "alice",
                 id="client cert: the user is the LAST CN, as Go's pkix.Name.CommonName"),
    pytest.param("front_proxy_ca", ("front-proxy-client", "intruder"), None,
                 id="front proxy: allowed-names is checked against the last CN"),
    pytest.param("front_proxy_ca", ("intruder", "front-proxy-client"), "bob",
                 id="front proxy: last CN allowed"),
])
async def test_several_common_names_are_read_like_kube_apiserver(authenticator, pki, ca_name, common_names,
                                                                 expected):
    """kube-apiserver (and the CSR approvers) see the last CN of a subject; reading the first one
    made the adapter see a different identity than the rest of the cluster for the same cert."""
    der = _multi_cn_certificate(getattr(pki, ca_name), common_names)
    if expected is None:
        with pytest.raises(Unauthorized):
            await authenticator.authenticate(peer_cert_der=der, headers=headers(*IDENTITY))
        return
    user = await authenticator.authenticate(peer_cert_der=der, headers=headers(*IDENTITY))
    assert user.name == expected
