"""Conformance checker for `prometheus_client` cases: one call of the adapter's real Prometheus
client (adapter.prometheus.client), sent to a local recorder that plays Prometheus; the URL it
requested is compared with upstream's `request_url` (scheme, host and path from `--prometheus-url`
as upstream joins them, the query parameters as a set, in upstream's key order).

Non-goals: the answer's handling (the services checkers), TLS and auth (adapter_flags).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from hack.conformance.adapter_compare import Result, Unsupported
from hack.conformance.adapter_rules import judge_outcome

__all__ = ["CHECKERS", "check_client_call"]

_EMPTY = {"query": {"status": "success", "data": {"resultType": "vector", "result": []}},
          "series": {"status": "success", "data": []}}


def _seconds(value: Any) -> float:
    """A case's time: epoch milliseconds (pmodel.Time) when it is that large, else seconds."""
    number = float(value)
    return number / 1000.0 if abs(number) > 1e11 else number


async def _recorded_call(case: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, str]], str | None]:
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    from adapter.prometheus.client import PrometheusClient
    from adapter.prometheus.errors import PrometheusError
    from hack.conformance.adapter_flags import parsed_flags
    from adapter.prometheus.settings import settings_from_args

    data = case["input"]
    seen: list[tuple[str, str, list[tuple[str, str]]]] = []

    async def record(request: web.Request) -> web.Response:
        params = list(parse_qsl(request.query_string, keep_blank_values=True))
        if request.method == "POST":
            params += parse_qsl(await request.text(), keep_blank_values=True)
        seen.append((request.method, request.path, params))
        if "prometheus_http_status" in data:  # Prometheus answers as the case says
            return web.Response(status=int(data["prometheus_http_status"]), text=str(data.get("prometheus_body", "")),
                                content_type="application/json")
        return web.json_response(_EMPTY["series" if request.path.endswith("/series") else "query"])

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    flags = dict(data)
    given = urlsplit(str(flags.get("--prometheus-url") or "http://localhost:9090"))
    failure: str | None = None
    async with TestServer(app, host="127.0.0.1") as server:
        local = urlunsplit(("http", f"127.0.0.1:{server.port}", given.path, given.query, ""))
        settings = settings_from_args(parsed_flags({**flags, "--prometheus-url": local}))
        client = PrometheusClient(settings)
        await client.start()
        try:
            await _call(client, data)
        except PrometheusError as err:  # the call's outcome: what the adapter would log and answer
            failure = str(err)
        finally:
            await client.close()
    method, path, params = seen[0]
    return method, urlunsplit((given.scheme, given.netloc, path, "", "")), params, failure


async def _call(client: Any, data: Mapping[str, Any]) -> None:
    call = str(data.get("call", "Query")).lower()
    if call == "query":
        at = data.get("time")
        await client.query(str(data.get("query", "")), time=None if at in (None, 0, "0") else _seconds(at))
    elif call == "series":
        selectors = data.get("query") or []
        selectors = [selectors] if isinstance(selectors, str) else [str(s) for s in selectors]
        window = data.get("time") or {}
        start = _seconds(window.get("start", 0)) if isinstance(window, Mapping) else 0.0
        end = _seconds(window.get("end", 0)) if isinstance(window, Mapping) else 0.0
        await client.series(selectors, start=start, end=end)
    else:
        raise Unsupported(f"the client has no {data.get('call')!r} call (Query and Series are what the "
                          "adapter uses; it never asks for ranges)")


def check_client_call(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> Result:
    try:
        method, url, params, failure = asyncio.run(_recorded_call(case))
    except Unsupported as err:  # a call this runner cannot make is a FAIL naming it, never a SKIP
        return Result(False, case["expected"], f"not checked: {err}")
    query = urlencode(sorted(params, key=lambda kv: kv[0]))  # Go's url.Values.Encode: sorted by key
    requested = url + (f"?{query}" if method == "GET" and query else "")
    got: dict[str, Any] = {"success": failure is None, "request_url": _canonical(requested),
                           "http_request": {"method": method, "path": urlsplit(url).path,
                                            "query_params": dict(params)}}
    if failure is not None:
        got["error"] = failure
    want = dict(case["expected"])
    if isinstance(want.get("request_url"), str):
        want["request_url"] = _canonical(want["request_url"])
    return judge_outcome(want, got)


def _canonical(url: str) -> str:
    """The URL with its query parameters in one order (a set of parameters, as Prometheus reads them)."""
    parts = urlsplit(url)
    params = sorted(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(params), ""))


CHECKERS = {"prometheus_client": check_client_call}
