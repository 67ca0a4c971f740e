"""Discovery endpoints: `/apis`, `/apis/<group>`, `/apis/<group>/<version>` (trailing slash too).

Answered from the current registry snapshot, never blocking on Prometheus; documents are
serialised once per snapshot. Aggregated-discovery-only requests on `/apis` get 406 from the
negotiation middleware, which makes kube-aggregator fall back to these legacy documents.

Non-goals: the documents' shape (discovery_docs).
"""

from __future__ import annotations

from aiohttp import web

from adapter.discovery.registry import Registry
from adapter.server import discovery_docs as docs
from adapter.server.context import CONTEXT, ServerContext
from adapter.server.handlers import compact_json, json_body

__all__ = ["register"]


class _Documents:
    """Serialised documents, rebuilt when the registry snapshot object changes."""

    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        self._snapshot: Registry | None = None
        self._lists: dict[tuple[str, str], bytes] = {}
        self.groups = ctx.groups.served()
        self.group_list = compact_json(docs.api_group_list(self.groups))
        self.group_docs = {g: compact_json(docs.api_group(g)) for g in self.groups}

    def resource_list(self, group: str, version: str) -> bytes:
        snapshot = self._ctx.registry()
        if snapshot is not self._snapshot:
            self._snapshot, self._lists = snapshot, {}
        cached = self._lists.get((group, version))
        if cached is None:
            if group == docs.CUSTOM:
                resources = docs.custom_resources(snapshot.custom_metrics())
            elif group == docs.EXTERNAL:
                resources = docs.external_resources(snapshot.external_metrics())
            else:
                resources = docs.resource_metrics_resources()
            cached = self._lists[(group, version)] = compact_json(docs.resource_list(group, version, resources))
        return cached


def register(app: web.Application) -> None:
    documents = _Documents(app[CONTEXT])

    async def group_list(_: web.Request) -> web.Response:
        return json_body(documents.group_list)

    app.router.add_get("/apis", group_list)
    app.router.add_get("/apis/", group_list)
    for group in documents.groups:
        body = documents.group_docs[group]

        async def group_doc(_: web.Request, body: bytes = body) -> web.Response:
            return json_body(body)

        app.router.add_get(f"/apis/{group}", group_doc)
        app.router.add_get(f"/apis/{group}/", group_doc)
        for version in docs.VERSIONS[group]:
            async def version_doc(_: web.Request, group: str = group, version: str = version) -> web.Response:
                return json_body(documents.resource_list(group, version))

            app.router.add_get(f"/apis/{group}/{version}", version_doc)
            app.router.add_get(f"/apis/{group}/{version}/", version_doc)
