"""Small HTTP helpers shared by the handlers: JSON responses, Status errors, body decoding.

Non-goals: protobuf or CBOR (clients negotiate JSON, see aggregated-apiserver.md §7).
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from kubecommon.status import BadRequest, NotAcceptable, StatusError, UnsupportedMediaType

from . import protobuf

JSON = "application/json"


def json_response(body: Any, status: int = 200) -> web.Response:
    return raw_json(json.dumps(body, separators=(",", ":")).encode(), status)


def raw_json(data: bytes, status: int = 200) -> web.Response:
    return web.Response(body=data, status=status, headers={"Content-Type": JSON})


def error_response(error: StatusError) -> web.Response:
    resp = json_response(error.to_dict(), error.code)
    resp.headers["X-Content-Type-Options"] = "nosniff"
    for key, value in error.headers.items():
        resp.headers[key] = value
    return resp


def accepts_json(accept: str) -> bool:
    """True unless the client listed only media types we cannot produce (§7)."""
    if not accept.strip():
        return True
    for media in accept.split(","):
        base, *params = [p.strip() for p in media.split(";")]
        base = base.lower()
        if base in ("*/*", "application/*"):
            return True
        if base == JSON:
            names = {p.split("=", 1)[0].strip() for p in params}
            if not names & {"as", "g", "v"} or _is_table(params):
                return True
    return False


def _is_table(params: list[str]) -> bool:
    return any(p.replace(" ", "") == "as=Table" for p in params)


def wants_table(accept: str) -> bool:
    for media in accept.split(","):
        base, *params = [p.strip() for p in media.split(";")]
        if base.lower() == JSON and _is_table(params):
            return True
    return False


def check_accept(request: web.Request) -> None:
    if not accepts_json(request.headers.get("Accept", "")):
        raise NotAcceptable.for_types((JSON, "application/yaml"))


async def read_body(request: web.Request) -> Any:
    data = await request.read()
    if not data:
        raise BadRequest("the request body is empty")
    ctype = request.headers.get("Content-Type", JSON).split(";")[0].strip().lower()
    if ctype == protobuf.CONTENT_TYPE:
        return protobuf.decode(data)
    try:
        if ctype.endswith("yaml"):
            return yaml.safe_load(data)
        if ctype.endswith("json") or ctype in ("", "*/*", "text/plain"):
            return json.loads(data)
    except (ValueError, yaml.YAMLError) as e:
        raise BadRequest(f"the body of the request could not be decoded: {e}") from None
    raise UnsupportedMediaType(f"the body of the request was in an unknown format - accepted "
                               f"media types include: {JSON}, application/yaml, {protobuf.CONTENT_TYPE}")
