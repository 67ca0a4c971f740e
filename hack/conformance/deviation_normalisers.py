"""The adapter deviations' normalisers (`deviations.DEVIATIONS`): each maps our answer to the one
upstream would give without the deviation, and the predicates saying which cases a deviation can
apply to. Pure functions of (our answer, the case).

Non-goals: the table itself and its reasons (`deviations`), running or checking cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

def unescape_regex_values(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """Undo RE2 QuoteMeta inside `=~"..."` / `!~"..."` (PromQL-quoted, so `\\\\.` in the text),
    in a query string or an observation's `query`."""
    if isinstance(got, dict) and isinstance(got.get("query"), str):
        return {**got, "query": unescape_regex_values(got["query"])}
    if not isinstance(got, str):
        return got

    def fix(match: re.Match[str]) -> str:
        return match.group(1) + re.sub(r"\\\\([\\.+*?()|\[\]{}^$])", r"\1", match.group(2)) + '"'

    return re.sub(r'([=!]~")((?:[^"\\]|\\.)*)"', fix, got)


def canonical_header_names(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """Header names as Go's http.Header canonicalises them, in a headers map or an observation's
    `http_headers`."""
    if isinstance(got, dict) and isinstance(got.get("http_headers"), dict):
        return {**got, "http_headers": canonical_header_names(got["http_headers"])}
    if not isinstance(got, dict):
        return got
    return {"-".join(p[:1].upper() + p[1:].lower() for p in k.split("-")): v for k, v in got.items()}


def as_upstream_series_request(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    if isinstance(got, dict) and isinstance(got.get("http_request"), dict):
        return {**got, "http_request": {**got["http_request"], "method": "GET", "no_end_param": True}}
    return got


def as_upstream_client_url(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """Drop our `timeout` parameter and write times as Go's model.Time does (no trailing zeros)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    if not isinstance(got, dict) or not isinstance(got.get("request_url"), str):
        return got
    parts = urlsplit(got["request_url"])
    sent = parse_qsl(parts.query, keep_blank_values=True)
    request = got.get("http_request") or {}
    if request.get("method") == "POST":  # series are always POSTed (form body), with `end`=now
        sent = [(k, v) for k, v in (request.get("query_params") or {}).items() if k != "end"]
    params = [(k, re.sub(r"\.?0+$", "", v) if k in ("time", "start", "end") and "." in v else v)
              for k, v in sorted(sent) if k != "timeout"]
    return {**got, "request_url": urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(params), ""))}


def without_placeholder(got: Any) -> Any:
    """A discovery answer without the placeholder entry, in a list or in each listing of a dict."""
    placeholders = ("custommetrics", "externalmetrics")
    if isinstance(got, dict):
        return {k: without_placeholder(v) for k, v in got.items()}
    if isinstance(got, list):
        return [e for e in got if (e.get("name") if isinstance(e, dict) else e) not in placeholders]
    return got


def milli_cpu(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """metrics-server-style nano-core CPU truncated to upstream's millicores."""
    from kubecommon.quantity import Quantity

    if isinstance(got, str):
        try:
            return str(Quantity.from_milli(int(Quantity.parse(got).value * 1000)))
        except ValueError:
            return got
    if isinstance(got, list):
        return [milli_cpu(item) for item in got]
    if isinstance(got, dict):
        return {k: (milli_cpu(v) if k in ("cpu", "quantity") or isinstance(v, (dict, list)) else v)
                for k, v in got.items()}
    return got


def is_cpu_case(case: Mapping[str, Any]) -> bool:
    data = case.get("input", {})
    return str(case.get("category", "")).startswith("resource_metrics") or data.get("api_path") == "resource.cpu"


def half_measured_pods_as_zero(got: Any, case: Mapping[str, Any]) -> Any:
    """Our answer with the pods we left out (a container lacking a resource, a NaN sample) added
    back as upstream serves them."""
    if not isinstance(got, dict):
        return got
    data = case.get("input", {})
    served = milli_cpu(got.get("pod_metrics", []))
    names = {(p["namespace"], p["name"]) for p in served}
    from hack.conformance.upstream_pods import upstream_pod

    added = [upstream_pod(p["namespace"], p["name"], data.get("prometheus_responses", {}))
             for p in data.get("pods", []) if (p["namespace"], p["name"]) not in names]
    every = sorted([*served, *added], key=lambda p: (p["namespace"], p["name"]))
    return {**got, "pod_metrics_in_input_order": every, "pod_metrics": every}


def is_non_finite_value(case: Mapping[str, Any]) -> bool:
    data = case.get("input", {})
    return data.get("api_path") in ("custom", "external") and str(data.get("prometheus_value")).lower() in (
        "nan", "+inf", "-inf", "inf")


def non_finite_as_upstream(got: Any, case: Mapping[str, Any]) -> Any:
    """Our answer for a NaN or ±Inf sample (left out of the answer) as upstream converts it: the
    custom provider maps NaN to 0 (its PR #308); everything else goes through the unguarded
    int64(v*1000), the int64 minimum on amd64. Any other answer of ours is kept: it excuses nothing."""
    if not (isinstance(got, dict) and got.get("success") is False and str(got.get("error", "")).startswith("left out")):
        return got
    data = case.get("input", {})
    nan = str(data.get("prometheus_value")).lower() == "nan"
    quantity = "0" if nan and data.get("api_path") == "custom" else "-9223372036854775808m"
    return {"success": True, "quantity": quantity, "values": [quantity]}


def unsupported_selector_as_upstream(got: Any, case: Mapping[str, Any]) -> Any:
    """Our 400 BadRequest for a `>`/`<` metric selector as upstream answers it, from the request
    path. Any other answer of ours is kept as it is: it is not the deviation, so it excuses nothing."""
    if not (isinstance(got, dict) and got.get("code") == 400 and got.get("reason") == "BadRequest"):
        return got
    path = case.get("input", {}).get("http", "").split("?", 1)[0].split("/")
    if case.get("category", "").startswith("external"):
        return {"code": 500, "reason": "InternalError", "message": "Internal error occurred: unable to fetch metrics",
                "details": {"causes": [{"message": "unable to fetch metrics"}]}}
    resource = path[-3] if len(path) >= 3 else ""
    return {"code": 404, "reason": "NotFound",
            "message": f"the server could not find the metric {path[-1]} for {resource}"}


def category(*names: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda case: case.get("category") in names


def upstream_fetch_error(case: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's Status for any failed Prometheus call, in the shape the errors checker compares."""
    status = {"code": 500, "reason": "InternalError", "message": "Internal error occurred: unable to fetch metrics"}
    if "details" in case.get("expected", {}):
        status["details"] = {"causes": [{"message": "unable to fetch metrics"}]}
    return status


def prometheus_5xx(case: Mapping[str, Any]) -> bool:
    status = case.get("input", {}).get("prometheus_http_status")
    return isinstance(status, int) and status >= 500


def has_metric_label_selector(case: Mapping[str, Any]) -> bool:
    return "metricLabelSelector=" in str(case.get("input", {}).get("http", ""))


def selector_error_as_upstream(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """Our 400 for a metricLabelSelector that does not parse, as upstream answers it: the parser's
    error returned bare from its REST storage, which the apiserver turns into 500 with no reason."""
    if isinstance(got, dict) and got.get("code") == 400 and got.get("reason") == "BadRequest":
        return {**got, "code": 500, "reason": ""}
    return got


def without_kept_missing(got: Any, case: Mapping[str, Any] | None = None) -> Any:
    """The registry after a second relist as upstream's, rebuilt from that relist alone: without
    the metrics we keep one relist longer because they went missing (`kept_missing_after_relist_2`)."""
    if not isinstance(got, dict) or not isinstance(got.get("registry_after_relist_2"), list):
        return got
    kept = got.get("kept_missing_after_relist_2") or []
    return {**got, "registry_after_relist_2": [i for i in got["registry_after_relist_2"] if i not in kept]}
