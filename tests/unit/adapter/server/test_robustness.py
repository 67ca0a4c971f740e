"""Arbitrary request text never breaks attribute derivation or negotiation (they run before any
handler, on every request, including unauthenticated ones)."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from kubecommon.kube.identity import UserInfo
from adapter.server.negotiation import accepts_json
from adapter.server.requestinfo import forbidden, review_spec
from kubecommon.requestinfo import derive_request_info
from kubecommon.status import InternalError

# An explicit alphabet (ASCII, separators, escapes, some non-ASCII) keeps Hypothesis from building
# its Unicode tables, which alone can exceed the 2 s unit-test budget on a loaded machine.
ALPHABET = string.printable + "%*/=,;é\u2603\x00"
text = st.text(alphabet=ALPHABET, max_size=12)
segment = st.one_of(st.sampled_from(["apis", "api", "namespaces", "*", "metrics", "pods", "watch", "proxy",
                                     "status", "", ".", "..", "v1beta1", "custom.metrics.k8s.io"]),
                    text)
paths = st.lists(segment, max_size=9).map(lambda parts: "/" + "/".join(parts))
queries = st.dictionaries(st.sampled_from(["watch", "fieldSelector", "labelSelector", "x"]),
                          st.text(alphabet=ALPHABET, max_size=30),
                          max_size=3)
methods = st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW"])


@settings(max_examples=100, deadline=None)
@given(method=methods, path=paths, query=queries)
def test_request_info_total_and_consistent(method, path, query):
    try:
        info = derive_request_info(method, path, query)
    except InternalError as err:  # kube-apiserver's 500 for a verb segment with nothing after it
        assert err.message.startswith("Internal error occurred: failed to create RequestInfo: unable to "
                                      "determine kind and namespace from url, ")
        assert path.rstrip("/").rsplit("/", 1)[-1] in ("watch", "proxy")
        return
    spec = review_spec(UserInfo(name="u"), info)
    if info.is_resource_request:
        assert set(spec["resourceAttributes"]) <= {"namespace", "verb", "group", "version", "resource",
                                                   "subresource", "name"}
        assert all(spec["resourceAttributes"].values())
    else:
        assert spec["nonResourceAttributes"] == {"path": path, "verb": method.lower()}
    error = forbidden(UserInfo(name="u"), info, "r").to_dict()
    assert (error["code"], error["reason"]) == (403, "Forbidden")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=200))
def test_accept_parsing_never_raises(header):
    assert accepts_json(header) in (True, False)
