"""Authorization decision order (spec §2.1) and SubjectAccessReview outcomes."""

import pytest

from kubecommon.kube.errors import KubeUnavailable
from kubecommon.kube.identity import UserInfo
from kubecommon.kube.reviews import AccessDecision
from adapter.server.authz import Authorizer, path_always_allowed
from kubecommon.requestinfo import derive_request_info
from kubecommon.status import Forbidden, InternalError


class Reviews:
    def __init__(self, decision=None, error=None):
        self.decision, self.error, self.specs = decision, error, []

    async def review(self, spec):
        self.specs.append(spec)
        if self.error:
            raise self.error
        return self.decision


POD_METRIC = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/rps"


@pytest.mark.parametrize("path, allowed, expected", [
    pytest.param("/healthz", ("/healthz",), True, id="exact path"),
    pytest.param("/healthz/x", ("/healthz",), False, id="exact means exact"),
    pytest.param("/debug/x", ("/debug/*",), True, id="star is a prefix"),
    pytest.param("/metrics", ("/healthz", "/readyz", "/livez"), False, id="metrics not in defaults"),
])
def test_always_allow_paths(path, allowed, expected):
    assert path_always_allowed(path, allowed) is expected


async def test_masters_skip_review():
    reviews = Reviews(AccessDecision(allowed=False))
    await Authorizer(reviews).authorize(UserInfo(name="system:kube-aggregator", groups=("system:masters",)),
                                        derive_request_info("GET", POD_METRIC, {}))
    assert reviews.specs == []


async def test_health_paths_skip_review_for_anonymous():
    reviews = Reviews(AccessDecision(allowed=False))
    await Authorizer(reviews).authorize(UserInfo(name="system:anonymous"), derive_request_info("GET", "/readyz", {}))
    assert reviews.specs == []


async def test_always_allow_paths_do_not_cover_resource_requests():
    reviews = Reviews(AccessDecision(allowed=False))
    with pytest.raises(Forbidden):
        await Authorizer(reviews, always_allow_paths=("/apis/*",)).authorize(
            UserInfo(name="u"), derive_request_info("GET", POD_METRIC, {}))


async def test_allowed_review_passes_and_sends_attributes():
    reviews = Reviews(AccessDecision(allowed=True))
    await Authorizer(reviews).authorize(UserInfo(name="hpa"), derive_request_info("GET", POD_METRIC, {}))
    assert reviews.specs[0]["resourceAttributes"]["subresource"] == "rps"


@pytest.mark.parametrize("decision", [
    pytest.param(AccessDecision(allowed=False), id="no opinion"),
    pytest.param(AccessDecision(allowed=False, denied=True, reason="nope"), id="denied"),
    pytest.param(AccessDecision(allowed=True, denied=True), id="allowed and denied is not allowed"),
])
async def test_not_allowed_is_403(decision):
    with pytest.raises(Forbidden):
        await Authorizer(Reviews(decision)).authorize(UserInfo(name="u"), derive_request_info("GET", POD_METRIC, {}))


async def test_review_failure_is_500_not_a_pass():
    with pytest.raises(InternalError):
        await Authorizer(Reviews(error=KubeUnavailable("down"))).authorize(
            UserInfo(name="u"), derive_request_info("GET", POD_METRIC, {}))
