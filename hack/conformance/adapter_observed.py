"""What each adapter case family is observed as: the one table of (family -> expected fields).

Every category of the case vocabulary (../shared/spec/vectors/FIELDS.md) is listed with the
expected fields its checker compares against the adapter's real answer. A case stating any other
field of the vocabulary FAILs before any checker runs, naming the field and what the family
observes (adapter_runner), so a hidden case can never pass on a part of the answer nobody looked
at. Provenance fields (`asserted_by_test`, `from_code_not_tested`) are accepted in every family
and never compared. Where a family's call can succeed or fail (a relist, a client call, a TLS or
auth flag set-up, a routing parse, the external lister, a request) it observes `success` and
`error` too; the log fields are compared, by the runner, with the lines the case's run logged,
in the families whose call logs what happened (a request's failure, a relist).

`markdown()` renders the table for docs/development.md (a test keeps the page in step).

Non-goals: how a field is compared (adapter_compare), driving the adapter (the checker modules).
"""

from __future__ import annotations

__all__ = ["LOG_FIELDS", "OBSERVED", "markdown"]

#: compared by the runner against the lines the case's run logged (adapter_runner._logged)
LOG_FIELDS = ("log_contains", "logged_error_prefix")

_OUTCOME = ("success", "error")
_ANSWER = ("status", "reason", "message", "details", "body", "items", "values", "query", "queries_issued_unordered")
_LISTING = ("before_relist", "metrics_unordered", "after_relist_unordered", "api_resources_unordered",
            "discovery_names_unordered", "discovery_resource_names")
_RESOURCE = (*_OUTCOME, "status", "reason", "message", "details", "queries_issued_unordered",
             "items_described_object_names")
_BUILD = (*_OUTCOME, "query")

OBSERVED: dict[str, tuple[str, ...]] = {
    "cli.flags": (*_OUTCOME, "fatal_error", "startup_error_contains"),
    "cli.prometheus_auth": _OUTCOME,
    "cli.prometheus_header": (*_OUTCOME, "fatal_error", "http_headers"),
    "cli.prometheus_tls": (*_OUTCOME, "client_certificates_present", "min_tls_version"),
    "prometheus_client": (*_OUTCOME, "request_url", "http_request"),
    "config.parse": (*_OUTCOME, "fatal_error", "startup_error_contains", *LOG_FIELDS),
    "naming": (*_OUTCOME, "metric_name", "name"),
    "series_filter": (*_OUTCOME, "matches"),
    "metrics_query.build (custom/resource path)": _BUILD,
    "metrics_query.build_external": _BUILD,
    "metrics_query.selector_to_promql": _BUILD,
    "quantity_conversion": (*_OUTCOME, "quantity", "values"),
    "custom.discovery_http": (*_OUTCOME, "http_request", "prometheus_series_calls", *_LISTING, *LOG_FIELDS),
    "custom.discovery_list": (*_LISTING, "discovery"),
    "custom.discovery_semantics": (*_LISTING, "discovery", "registry_after_relist_2"),
    "custom.registry_query": (*_OUTCOME, "found", "query", "queries_issued_unordered", "http", "metric",
                              "group_resource", "namespaced", "metric_selector"),
    "custom.request_to_promql": (*_OUTCOME, "found", "query", "queries_issued_unordered", "resolved_request",
                                 "metric_selector", "metric"),
    "custom.response_json": (*_OUTCOME, *_ANSWER, "items_described_object_names"),
    "custom.errors": (*_OUTCOME, *_ANSWER, "items_described_object_names", *LOG_FIELDS),
    "external.discovery": (*_OUTCOME, "callback_invoked", "first_list_series_count",
                           "second_list_series_count_nonzero", "inner_calls_after_first_list",
                           "inner_calls_after_update", "inner_calls_after_second_list", "discovery",
                           "discovery_names_unordered", "discovery_resource_names", "api_resources_unordered",
                           *LOG_FIELDS),
    "external.request_to_promql": (*_OUTCOME, "found", "query", "queries_issued_unordered", "discovery_entry",
                                   "metric_selector", "metric"),
    "external.response_json": (*_OUTCOME, *_ANSWER),
    "external.errors": (*_OUTCOME, *_ANSWER, *LOG_FIELDS),
    "resource_metrics.query_build": (*_OUTCOME, "query", "queries_issued_unordered"),
    "resource_metrics.pods": (*_RESOURCE, "pod_metrics", "pod_metrics_in_input_order"),
    "resource_metrics.nodes": (*_RESOURCE, "node_metrics", "node_metrics_in_input_order"),
    "http.routing": (*_OUTCOME, "op", "group_resource", "namespace", "namespaced", "name", "object_selector",
                     "metric", "metric_selector", "status", "reason", "message"),
    "e2e": (*_OUTCOME, "status", "reason", "message", "items", "values", "pod_metrics", "node_metrics"),
}


def markdown() -> str:
    """The table as a Markdown table (family, fields), in the order above."""
    # the family as text, not code: the docs theme breaks code anywhere, text only between words
    rows = [f"| {family} | {', '.join(f'`{f}`' for f in fields)} |" for family, fields in OBSERVED.items()]
    return "\n".join(["| Family | Observed fields |", "| --- | --- |", *rows]) + "\n"
