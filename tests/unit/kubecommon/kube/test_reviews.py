"""TokenReview / SubjectAccessReview clients: wire bodies, TTL caching, bounds, retries."""

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig
from kubecommon.kube.errors import KubeAPIError, KubeError, KubeUnavailable
from kubecommon.kube.reviews import SubjectAccessReviewer, TokenReviewer
from kubecommon.kube.ttlcache import TTLCache


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


async def no_sleep(_):
    return None


async def test_token_review_caches_both_outcomes_for_the_ttl(api):
    api.token_users["good"] = {"username": "carol", "uid": "u-1", "groups": ["g"], "extra": {"k": ["v"]}}
    clock = Clock()
    reviewer = TokenReviewer(api.client, ttl=10, clock=clock, sleep=no_sleep)
    ok = await reviewer.review("good")
    assert (ok.authenticated, ok.user.name, ok.user.uid, ok.user.groups, dict(ok.user.extra)) == (
        True, "carol", "u-1", ("g",), {"k": ("v",)})
    bad = await reviewer.review("bad")
    assert (bad.authenticated, bad.error) == (False, "bad token")
    await reviewer.review("good")
    await reviewer.review("bad")
    assert api.calls.count("TokenReview") == 2
    clock.now += 10
    await reviewer.review("good")
    assert api.calls.count("TokenReview") == 3


async def test_api_errors_are_not_cached_and_retried(api):
    api.review_status = 500
    reviewer = TokenReviewer(api.client, clock=Clock(), retry_steps=3, sleep=no_sleep)
    with pytest.raises(KubeAPIError):
        await reviewer.review("good")
    assert api.calls.count("TokenReview") == 3
    api.review_status = 200
    api.token_users["good"] = {"username": "carol"}
    assert (await reviewer.review("good")).authenticated


async def test_forbidden_review_is_not_retried(api):
    api.review_status = 403
    reviewer = SubjectAccessReviewer(api.client, clock=Clock(), retry_steps=5, sleep=no_sleep)
    with pytest.raises(KubeAPIError):
        await reviewer.review({"user": "x", "nonResourceAttributes": {"path": "/apis", "verb": "get"}})
    assert api.calls.count("SAR") == 1


async def test_sar_allowed_and_denied_have_their_own_ttls(api):
    api.sar_allowed_users = {"alice"}
    clock = Clock()
    reviewer = SubjectAccessReviewer(api.client, allowed_ttl=30, denied_ttl=5, clock=clock, sleep=no_sleep)
    alice = {"user": "alice", "nonResourceAttributes": {"path": "/apis", "verb": "get"}}
    bob = {"user": "bob", "nonResourceAttributes": {"path": "/apis", "verb": "get"}}
    assert (await reviewer.review(alice)).allowed
    assert not (await reviewer.review(bob)).allowed
    clock.now += 6
    await reviewer.review(alice)
    await reviewer.review(bob)
    assert api.calls.count("SAR") == 3  # bob's denial expired after 5 s, alice's allow is still cached


async def test_concurrent_identical_reviews_are_sent_once(api):
    import asyncio
    api.sar_allowed_users = {"alice"}
    reviewer = SubjectAccessReviewer(api.client, clock=Clock(), sleep=no_sleep)
    spec = {"user": "alice", "nonResourceAttributes": {"path": "/apis", "verb": "get"}}
    results = await asyncio.gather(*(reviewer.review(spec) for _ in range(10)))
    assert all(r.allowed for r in results)
    assert api.calls.count("SAR") == 1


async def test_huge_specs_are_not_cached(api):
    reviewer = SubjectAccessReviewer(api.client, clock=Clock(), sleep=no_sleep)
    spec = {"user": "u" * 10_001, "nonResourceAttributes": {"path": "/apis", "verb": "get"}}
    await reviewer.review(spec)
    await reviewer.review(spec)
    assert api.calls.count("SAR") == 2


@pytest.mark.parametrize("steps, expected", [
    pytest.param([("put", "a", 10), ("put", "b", 10), ("get", "a", None), ("put", "c", 10)], {"a", "c"},
                 id="least recently used evicted"),
    pytest.param([("put", "a", 1), ("tick", None, 1)], set(), id="expired entries vanish"),
])
def test_ttl_cache_bounds(steps, expected):
    cache, now = TTLCache(max_entries=2), 0.0
    for op, key, arg in steps:
        if op == "put":
            cache.put(key, key, expires_at=now + arg)
        elif op == "get":
            cache.get(key, now=now)
        else:
            now += arg
    assert {k for k in "abc" if cache.get(k, now=now) is not None} == expected


@contextlib.asynccontextmanager
async def answered_by(handler, *, timeout: float) -> AsyncIterator[KubeClient]:
    """A started KubeClient of a local API server whose every POST `handler` answers."""
    app = web.Application()
    app.router.add_post("/{tail:.*}", handler)
    async with TestServer(app, host="127.0.0.1") as server:
        client = KubeClient(KubeConfig(server=str(server.make_url("")).rstrip("/"), token="t"), timeout=timeout)
        await client.start()
        try:
            yield client
        finally:
            await client.close()


def _review(which, client, **options):
    if which == "TokenReview":
        return TokenReviewer(client, **options).review("token")
    return SubjectAccessReviewer(client, **options).review({"user": "u"})


@pytest.mark.parametrize("which", ["TokenReview", "SubjectAccessReview"])
async def test_one_deadline_bounds_a_review_and_all_its_retries_against_a_silent_api_server(which):
    """A stopped (not refusing) API server: each attempt would wait the client's timeout, five
    times over; the review as a whole gives up at its deadline instead."""
    silent = asyncio.Event()

    async def hang(_request):
        await silent.wait()
        return web.json_response({})

    async with answered_by(hang, timeout=30) as client:
        try:
            with pytest.raises(KubeUnavailable, match=r"review not answered within 0.3s \(retries included\)"):
                await _review(which, client, deadline=0.3)
        finally:
            silent.set()


@pytest.mark.parametrize("which, status", [
    pytest.param("SubjectAccessReview", {"allowed": "false"}, id="SAR allowed as a string"),
    pytest.param("SubjectAccessReview", {"allowed": 1}, id="SAR allowed as a number"),
    pytest.param("SubjectAccessReview", ["allowed"], id="SAR status not an object"),
    pytest.param("TokenReview", {"authenticated": "false", "user": {"username": "admin"}},
                 id="TokenReview authenticated as a string"),
])
async def test_an_answer_that_is_not_a_boolean_is_a_failed_review_not_a_yes(which, status):
    """kube-apiserver's Go client cannot decode a non-boolean `allowed`/`authenticated` and the
    request fails; reading it as truthy let a malformed answer ("false") through as allowed."""
    async def answer(request):
        return web.json_response({**await request.json(), "status": status}, status=201)

    async with answered_by(answer, timeout=2) as client:
        with pytest.raises(KubeError, match="malformed"):
            await _review(which, client, clock=Clock(), sleep=no_sleep)
