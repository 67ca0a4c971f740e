"""How a case's `expected` compares with what the adapter did: the rules of the case-file
vocabulary (../shared/spec/vectors/FIELDS.md), in one place for every checker.

- Only the keys present in `expected` are compared (recursively, for objects); `null` is "not
  asserted".
- `*_unordered` fields compare as multisets; `*_contains` is a substring; `logged_error_prefix`
  the prefix of a log line the run produced; an expected string ending in "(… approximate)" gives
  upstream's wording roughly, so only the values it names (quoted or identifier-like) must appear.
- A field whose value describes a property in prose is for a person to check: `prose_fields`
  finds them and the runner reports the case SKIP "prose expectation", never PASS.
- The vocabulary itself: a category, input or expected field outside it is a FAIL naming it.

Also the verdict every checker returns: `Result(ok, expected, got)` (`judge` compares under these
rules), and `Unsupported` for a case that needs a part of the system no checker can drive.

Non-goals: running cases (adapter_runner) or driving the adapter (the checker modules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hack.conformance.adapter_observed import OBSERVED

__all__ = ["CATEGORIES", "EXPECTED_FIELDS", "INPUT_FIELDS", "PROVENANCE_FIELDS", "Result", "Unsupported",
           "approximate_matches", "is_prose", "judge", "matches", "prose_fields", "unknown_input_fields"]

#: The vocabulary's categories: the families of adapter_observed's table, which lists each one.
CATEGORIES = frozenset(OBSERVED)

INPUT_FIELDS = frozenset({
    "yaml", "rule", "rest_mapper", "cluster_has_resource", "config_has_rules", "discovered_series", "series",
    "series_name", "names", "namespace", "resource", "metric_info", "metric_selector", "extra_group_by",
    "group_by", "group_by_slice", "resource_names", "http", "api", "api_path", "format", "now_unix_ms",
    "prometheus_result", "prometheus_vector", "prometheus_value", "prometheus_responses",
    "prometheus_http_status", "kube_list_result_names", "kube_list_error", "pods", "nodes", "steps", "file",
    "excerpt", "assume", "call", "query", "time", "relist_1", "relist_2", "calls",
    "prometheus_body", "config",  # the body behind prometheus_http_status; a whole config object
})

#: Inputs that describe a sequence in prose: a case built on them can only be read by a person.
PROSE_INPUTS = frozenset({"assume", "relist_1", "relist_2", "calls"})

PROVENANCE_FIELDS = frozenset({"asserted_by_test", "from_code_not_tested"})

#: Expected fields whose value is never a sentence: a string there describes a property.
STRUCTURED_FIELDS = frozenset({
    "success", "found", "callback_invoked", "queries_issued_unordered", "matches", "namespaced",
    "http_request", "http_headers", "client_certificates_present", "discovery", "discovery_entry",
    "discovery_names_unordered", "discovery_resource_names", "api_resources_unordered", "metrics_unordered",
    "before_relist", "after_relist_unordered", "prometheus_series_calls", "registry_after_relist_2",
    "first_list_series_count", "second_list_series_count_nonzero", "inner_calls_after_first_list",
    "inner_calls_after_update", "inner_calls_after_second_list", "status", "details", "body", "items",
    "items_described_object_names", "values", "resolved_request", "pod_metrics", "node_metrics",
    "pod_metrics_in_input_order", "node_metrics_in_input_order",
    "http",  # the public file's registry cases: the HTTP answer of a registry miss
})

TEXT_FIELDS = frozenset({
    "error", "fatal_error", "startup_error_contains", "log_contains", "logged_error_prefix", "query",
    "metric_name", "name", "group_resource", "object_selector", "op", "metric", "metric_selector",
    "request_url", "min_tls_version", "reason", "message", "quantity",
    "namespace",  # the public file's routing cases: the namespace a path resolves to
})

EXPECTED_FIELDS = STRUCTURED_FIELDS | TEXT_FIELDS | PROVENANCE_FIELDS

_APPROXIMATE = re.compile(r"\s*\(([^()]*\bapproximate\b[^()]*)\)\s*$", re.IGNORECASE)
_PROSE_TEXT = re.compile(
    r"^(non-empty|nonempty|empty or |any |some |every |each |all |at least |at most |unchanged|same as |"
    r"one of |none of |whatever )|; (every|each|all|no) |\be\.g\.", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]+)"|`([^`]+)`|\'([^\']+)\'')
_IDENTIFIER = re.compile(r"[A-Za-z0-9_./:-]*[_./:0-9][A-Za-z0-9_./:-]*|[a-z]+[A-Z][A-Za-z0-9]*")


def is_prose(key: str, value: Any) -> bool:
    """A value describing a property rather than being one."""
    if not isinstance(value, str) or key in PROVENANCE_FIELDS:
        return False
    if key in STRUCTURED_FIELDS:
        return True
    return bool(_PROSE_TEXT.search(value.strip()))


def prose_fields(expected: Any) -> list[str]:
    if not isinstance(expected, Mapping):
        return []
    return sorted(str(k) for k, v in expected.items() if is_prose(str(k), v))


def unknown_input_fields(data: Any) -> list[str]:
    if not isinstance(data, Mapping):
        return []
    return sorted(str(k) for k in data if not str(k).startswith(("--", "_")) and k not in INPUT_FIELDS)


def approximate_matches(expected: str, got: Any) -> bool:
    """Upstream's wording given roughly: the values it names must appear in our text."""
    core = _APPROXIMATE.sub("", expected).strip()
    text = got if isinstance(got, str) else str(got)
    named = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(core)]
    named = named or [t.strip(".:") for t in _IDENTIFIER.findall(core) if len(t.strip(".:")) > 2]
    if named:
        return all(n.lower() in text.lower() for n in named)
    words = core.lower().split()[:4]
    return bool(words) and " ".join(words) in text.lower()


def matches(expected: Any, got: Any, key: str = "") -> bool:
    """`got` satisfies `expected` under the vocabulary's rules (see the module docstring)."""
    if expected is None:
        return True
    if key.endswith("_contains") and isinstance(expected, str):
        return isinstance(got, str) and expected in got
    if key == "logged_error_prefix" and isinstance(expected, str):
        lines = [got] if isinstance(got, str) else list(got or [])
        return any(isinstance(line, str) and line.startswith(expected) for line in lines)
    if isinstance(expected, str) and _APPROXIMATE.search(expected):
        return approximate_matches(expected, got)
    if isinstance(expected, Mapping):
        return isinstance(got, Mapping) and all(
            k in got and matches(v, got[k], str(k)) for k, v in expected.items()
            if v is not None and k not in PROVENANCE_FIELDS)
    if isinstance(expected, list):
        if not isinstance(got, Sequence) or isinstance(got, str) or len(got) != len(expected):
            return False
        if key.endswith("_unordered"):
            return _same_multiset(expected, list(got))
        return all(matches(e, g) for e, g in zip(expected, got, strict=True))
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    return bool(expected == got)


def _same_multiset(expected: list[Any], got: list[Any]) -> bool:
    remaining = list(got)
    for item in expected:
        index = next((i for i, g in enumerate(remaining) if matches(item, g)), None)
        if index is None:
            return False
        remaining.pop(index)
    return True


class Unsupported(Exception):
    """The case cannot be checked by this runner (reported as SKIP with why)."""


@dataclass(frozen=True, slots=True)
class Result:
    """A checker's verdict: whether our answer `got` meets the case's `expected`."""

    ok: bool
    expected: Any
    got: Any


def judge(expected: Any, got: Any) -> Result:
    """The verdict under the vocabulary's comparison rules (`matches`)."""
    return Result(matches(expected, got), expected, got)
