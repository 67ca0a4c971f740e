"""The table of request-info cases (tests/cases/requestinfo.yaml: kube-apiserver's
RequestInfoFactory, with the cases of k8s.io/apiserver's requestinfo_test.go among them) against
kubecommon.requestinfo, the one derivation both the adapter (it authorizes every request it serves)
and the API-server stand-in (RBAC, routing) use.

The user-identity rule both sides apply (k8s.io/apiserver's AuthenticatedGroupAdder) is checked
the same way at the end of this file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from yarl import URL

from hack.kube_standin.authn import with_authenticated
from hack.kube_standin.rbac import UserInfo as StandinUser
from kubecommon.kube.identity import UserInfo as AdapterUser
from kubecommon.requestinfo import derive_request_info
from kubecommon.status import StatusError

TABLE = Path(__file__).resolve().parents[2] / "cases" / "requestinfo.yaml"
ROWS: list[dict[str, Any]] = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["cases"]
RESOURCE_KEYS = ("verb", "group", "version", "namespace", "resource", "subresource", "name", "parts")


def _derive(method: str, path: str, query: Mapping[str, str]) -> dict[str, Any]:
    info = derive_request_info(method, path, query)
    if not info.is_resource_request:
        return {"resource": False, "verb": info.verb, "path": info.path}
    return {"verb": info.verb, "group": info.api_group, "version": info.api_version, "namespace": info.namespace,
            "resource": info.resource, "subresource": info.subresource, "name": info.name,
            "parts": list(info.parts), "prefix": info.api_prefix, "path": info.path}


def _want(row: Mapping[str, Any]) -> dict[str, Any]:
    want = dict(row["want"])
    if want.get("error") or want.get("resource") is False:
        return {**want, "path": row["path"]} if not want.get("error") else want
    out = {key: want.get(key, [] if key == "parts" else "") for key in RESOURCE_KEYS}
    return {**out, "prefix": row["path"].strip("/").split("/")[0], "path": row["path"]}


def test_the_table_is_well_formed() -> None:
    ids = [row["id"] for row in ROWS]
    assert len(ids) == len(set(ids)), "row ids are unique"
    for row in ROWS:
        assert set(row) <= {"id", "method", "path", "encoded", "query", "want"}, row["id"]
        assert set(row["want"]) <= {"error", *RESOURCE_KEYS}, row["id"]


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_request_info_agrees_with_kube_apiserver(row: Mapping[str, Any]) -> None:
    method, query = row.get("method", "GET"), {k: str(v) for k, v in (row.get("query") or {}).items()}
    path = URL(row["path"]).path if row.get("encoded") else row["path"]  # aiohttp's request.path
    want = _want(row)
    if want.get("error"):
        with pytest.raises(StatusError) as raised:
            _derive(method, path, query)
        assert raised.value.code == 500
        assert "failed to create RequestInfo" in str(raised.value)
        return
    assert _derive(method, path, query) == {**want, "path": path}


# --- who is asking: the authenticated-group adder both sides apply ---------------------------

IDENTITY_ROWS = [
    pytest.param("alice", (), ("system:authenticated",), id="a user joins system:authenticated"),
    pytest.param("alice", ("dev",), ("dev", "system:authenticated"), id="after its own groups"),
    pytest.param("alice", ("system:authenticated", "dev"), ("system:authenticated", "dev"),
                 id="already authenticated: unchanged"),
    pytest.param("alice", ("system:unauthenticated",), ("system:unauthenticated",),
                 id="unauthenticated group: unchanged"),
    pytest.param("system:anonymous", (), (), id="anonymous: unchanged"),
    pytest.param("system:serviceaccount:kube-system:hpa", ("system:serviceaccounts",),
                 ("system:serviceaccounts", "system:authenticated"), id="service account"),
]


@pytest.mark.parametrize("name, groups, want", IDENTITY_ROWS)
def test_authenticated_group_adder_agrees(name: str, groups: tuple[str, ...], want: tuple[str, ...]) -> None:
    extra = {"scopes": ("a", "b")}
    adapter = AdapterUser(name=name, uid="u", groups=groups, extra=extra).with_authenticated_group()
    standin = with_authenticated(StandinUser(name=name, uid="u", groups=groups, extra=extra))
    assert adapter.groups == standin.groups == want
    assert (adapter.name, adapter.uid, dict(adapter.extra)) == (standin.name, standin.uid, dict(standin.extra))
    # the stand-in's TokenReview status.user is read back by the adapter as the same identity
    assert AdapterUser.from_review(standin.to_dict()) == adapter


# --- through the adapter's HTTP API: a RequestInfo kube-apiserver cannot build is a 500 ------

@pytest.mark.timeout(10)  # two in-process servers (the adapter, a fake Prometheus): past 2 s when loaded
async def test_a_special_verb_alone_is_kube_apiservers_500_through_the_api() -> None:
    from aiohttp import web

    from tests.unit.adapter.api_harness import CUSTOM, serve_adapter

    async def no_prometheus(request: web.Request) -> web.StreamResponse:
        raise AssertionError("no Prometheus call expected")

    async with serve_adapter(no_prometheus) as http:
        response = await http.get(f"{CUSTOM}/watch")
        body = await response.json()
    assert response.status == 500
    assert body["reason"] == "InternalError"
    assert body["message"] == ("Internal error occurred: failed to create RequestInfo: unable to determine "
                               f"kind and namespace from url, {CUSTOM}/watch")
