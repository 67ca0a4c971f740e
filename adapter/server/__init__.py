"""The adapter's HTTPS API server (aiohttp): TLS, delegated auth, discovery, health, metrics APIs.

Modules: `routes` (the route table, `build_app`), `middleware` (errors → Status, auth,
negotiation), `serving` (TLS contexts, certificate reload), `authn`/`authz`/`requestinfo`
(delegated authentication and authorization), `options` (the serving and auth flags),
`discovery_docs`, `telemetry` (/metrics), `handlers/*` (one module per concern), `params` (their
query parameters), `render_metrics` (metric bodies).
"""
