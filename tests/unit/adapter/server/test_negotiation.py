"""Which Accept headers get JSON and which get 406 (spec §7 and §3.3)."""

import pytest

from adapter.server.negotiation import accepts_json


@pytest.mark.parametrize("accept, expected", [
    pytest.param(None, True, id="no Accept header"),
    pytest.param("", True, id="empty Accept header"),
    pytest.param("application/json, */*", True, id="kubectl get --raw"),
    pytest.param("application/vnd.kubernetes.protobuf, */*", True, id="kubectl top / HPA: protobuf with */*"),
    pytest.param("application/vnd.kubernetes.protobuf,application/json", True,
                 id="generated clientset: protobuf then json"),
    pytest.param("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
                 "g=meta.k8s.io,application/json", True, id="kubectl get pods.metrics: Table with json fallback"),
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", False,
                 id="aggregator v2-only discovery probe"),
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                 "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", False,
                 id="aggregator v2 and v2beta1 probe"),
    pytest.param("application/vnd.kubernetes.protobuf", False, id="protobuf only"),
    pytest.param("application/json;as=Table;v=v1;g=meta.k8s.io", False, id="Table only"),
    pytest.param("application/*", True, id="application wildcard"),
    pytest.param("text/html", False, id="html only"),
    pytest.param("application/json;q=0, text/plain", False, id="json explicitly refused"),
    pytest.param("APPLICATION/JSON; charset=utf-8", True, id="case and charset parameter"),
    pytest.param("garbage", False, id="junk media range"),
    pytest.param(",,,", False, id="only separators"),
])
def test_accepts_json(accept, expected):
    assert accepts_json(accept) is expected
