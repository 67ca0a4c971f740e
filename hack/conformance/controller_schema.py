"""Which case fields the controller conformance runner honours, per case kind.

A hidden case file may carry fields the public one does not. A field this runner does not
understand could change the expected answer, so it must not be ignored: `unknown_fields(case)`
lists every input path that no pattern below accepts, and the runner reports the case as FAIL
naming them. Purely descriptive fields (provenance, notes, the metric selector a fake client
checked) are accepted explicitly.

Paths: dict keys joined by ".", list items as "[]"; in a pattern `*` stands for one key or part
of one (no "."). Under a *map* path (labels, the group_pods metrics map) keys are data, not
fields, and are written as `*`. Non-goals: value validation (the handlers raise on bad values).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from hack.conformance.adapter_compare import PROVENANCE_FIELDS  # FIELDS.md: one list for both runners

CASE_KEYS = frozenset({"id", "kind", "source", "inputs", "expected", "note", "notes", "since", "description"})

_SELECTOR = ("{p}", "{p}.matchLabels", "{p}.matchLabels.*", "{p}.matchExpressions",
             "{p}.matchExpressions[]", "{p}.matchExpressions[].key", "{p}.matchExpressions[].operator",
             "{p}.matchExpressions[].values")  # fmt: skip
_CONTAINERS = ("{p}", "{p}[]", "{p}[].name", "{p}[].*_request_milli")
_PODS = (
    "pods", "pods[]", "pods[].name", "pods[].phase", "pods[].ready_condition", "pods[].ready_last_transition",
    "pods[].start_time", "pods[].deletion_timestamp_set", "pods[].labels", "pods[].labels.*",
    "pods[].pod_level_*_request_milli", *(s.format(p="pods[].containers") for s in _CONTAINERS),
    *(s.format(p=f"pods[].{k}") for k in ("init_containers", "initContainers") for s in _CONTAINERS),
    *(f"pods[].{k}[].{f}" for k in ("init_containers", "initContainers")
      for f in ("restart_policy", "restartPolicy", "restartable", "restart_policy_always")),
)  # fmt: skip
_RESOURCE_METRICS = (
    "resource_metrics", "resource_metrics[]", "resource_metrics[].pod", "resource_metrics[].timestamp",
    "resource_metrics[].window_s", "resource_metrics[].containers", "resource_metrics[].containers[]",
    "resource_metrics[].containers[].name", "resource_metrics[].containers[].*_usage_milli",
)  # fmt: skip
_POD_CUSTOM_METRICS = ("pod_custom_metrics", "pod_custom_metrics[]", "pod_custom_metrics[].pod",
                       "pod_custom_metrics[].timestamp", "pod_custom_metrics[].value_milli",
                       "pod_custom_metrics[].window_s")  # fmt: skip
_READINESS = ("now", "cpu_initialization_period_s", "initial_readiness_delay_s")
_RECS = ("recommendations", "recommendations[]", "recommendations[].replicas", "recommendations[].age_s")
_EVENTS = tuple(f"{d}{s}" for d in ("scale_up_events", "scale_down_events", "prev_events")
                for s in ("", "[]", "[].replica_change", "[].age_s", "[].outdated"))  # fmt: skip
_RULES = ("{p}", "{p}.select_policy", "{p}.stabilization_window_s", "{p}.tolerance", "{p}.policies",
          "{p}.policies[]", "{p}.policies[].type", "{p}.policies[].value", "{p}.policies[].period_s")  # fmt: skip
_TARGET = ("{p}", "{p}.type", "{p}.averageUtilization", "{p}.averageValue", "{p}.averageValue_milli",
           "{p}.value", "{p}.value_milli")  # fmt: skip
_METRIC_ID = ("{p}.metric", "{p}.metric.name", *(s.format(p="{p}.metric.selector") for s in _SELECTOR))
_HPA_METRICS = (
    "hpa.metrics", "hpa.metrics[]", "hpa.metrics[].type",
    *(f"hpa.metrics[].{src}{s}" for src in ("resource", "containerResource")
      for s in ("", ".name", ".container", *(x.format(p=".target") for x in _TARGET))),
    *(x.format(p=f"hpa.metrics[].{src}") for src in ("pods", "object", "external") for x in ("{p}", *_METRIC_ID)),
    *(x.format(p=f"hpa.metrics[].{src}.target") for src in ("pods", "object", "external") for x in _TARGET),
    "hpa.metrics[].object.describedObject", "hpa.metrics[].object.describedObject.apiVersion",
    "hpa.metrics[].object.describedObject.kind", "hpa.metrics[].object.describedObject.name",
)  # fmt: skip
_HPA = (
    "hpa", "hpa.namespace", "hpa.name", "hpa.minReplicas", "hpa.maxReplicas", "hpa.scaleTargetRef",
    "hpa.scaleTargetRef.apiVersion", "hpa.scaleTargetRef.kind", "hpa.scaleTargetRef.name", *_HPA_METRICS,
    "hpa.behavior", *(x.format(p=f"hpa.behavior.{d}") for d in ("scaleUp", "scaleDown") for x in _RULES),
    "hpa.status", "hpa.status.currentReplicas", "hpa.status.desiredReplicas", "hpa.status.lastScaleTime",
    "hpa.status.conditions", "hpa.status.conditions[]", "hpa.status.conditions[].type",
    "hpa.status.conditions[].status", "hpa.status.conditions[].reason", "hpa.status.conditions[].message",
    "hpa.status.conditions[].lastTransitionTime", "hpa.status.currentMetrics", "hpa.status.currentMetrics[]",
    "hpa.status.currentMetrics[].type",
    *(f"hpa.status.currentMetrics[].{src}{s}" for src in ("resource", "containerResource", "pods", "object", "external")
      for s in ("", ".name", ".container", ".metric", ".metric.name", ".describedObject", ".describedObject.*",
                ".current", ".current.averageUtilization", ".current.averageValue", ".current.averageValue_milli",
                ".current.value", ".current.value_milli",
                *(x.format(p=".metric.selector") for x in _SELECTOR))),
)  # fmt: skip

ALLOWED: dict[str, tuple[str, ...]] = {
    "replica_calculator": (
        "function", "metric_source", "metric_name", "current_replicas", "current_replicas_meaning",
        "resource", "container", "object_metric_value_milli", "external_metric_values_milli",
        *(x.format(p="target") for x in ("{p}", "{p}.type", "{p}.average_utilization_percent",
                                          "{p}.average_value_milli", "{p}.value_milli")),
        "tolerance", "tolerance.scale_down", "tolerance.scale_up", "feature_gates",
        "feature_gates.PodLevelResources", "feature_gates.HPAConfigurableTolerance",
        "described_object", "described_object.apiVersion", "described_object.kind", "described_object.name",
        *(s.format(p="metric_selector") for s in _SELECTOR),
        *_READINESS, *_PODS, *_RESOURCE_METRICS, *_POD_CUSTOM_METRICS,
    ),
    "group_pods": ("resource", *_READINESS, *_PODS, "metrics", "metrics.*", "metrics.*.value_milli",
                   "metrics.*.timestamp", "metrics.*.window_s"),
    "calculate_requests": ("resource", "container", "feature_gates", "feature_gates.PodLevelResources", *_PODS),
    "convert_desired_replicas_with_rules": ("current_replicas", "desired_replicas", "min_replicas",
                                            "max_replicas", "scale_up_limit_factor", "scale_up_limit_minimum"),
    "stabilize_recommendation_legacy": ("downscale_stabilization_window_s", "prenormalized_desired_replicas",
                                        *_RECS),
    "behavior_rate_limit": (
        "current_replicas", "desired_replicas", "min_replicas", "max_replicas", *_EVENTS,
        *(x.format(p=f"scale_{d}_rules_{k}") for d in ("up", "down") for k in ("as_given", "effective")
          for x in _RULES),
    ),
    "scale_limit_with_rules": ("direction", "current_replicas", *(x.format(p="rules") for x in _RULES), *_EVENTS),
    "store_scale_event": ("behavior_present", "replica_change", "applies_to", *(x.format(p="rules") for x in _RULES),
                          *_EVENTS),
    "behavior_stabilization": ("current_replicas", "prenormalized_desired_replicas",
                               "scale_up_stabilization_window_s", "scale_down_stabilization_window_s", *_RECS),
    "controller_reconcile": (
        *_HPA, "scale", "scale.spec_replicas", "scale.status_replicas", "scale.status_selector", *_PODS,
        *_RESOURCE_METRICS, *_POD_CUSTOM_METRICS, "object_metric_value_milli", "external_metric_values_milli",
        *_RECS, *_EVENTS, "failures", "failures.*", "other_hpa_selectors", "other_hpa_selectors[]",
        "other_hpa_selectors[].hpa", "other_hpa_selectors[].selector", "feature_gates",
        "feature_gates.HPAConfigurableTolerance", "feature_gates.HPAScaleToZero", "feature_gates.PodLevelResources",
        "controller_config", *(f"controller_config.{k}" for k in (
            "tolerance", "downscale_stabilization_s", "cpu_initialization_period_s", "initial_readiness_delay_s",
            "scale_up_limit_factor", "scale_up_limit_minimum")),
    ),
}  # fmt: skip

#: What each kind's answer is observed as: the `expected` fields its replay compares. A kind whose
#: call can fail (a metrics client error, a missing request, a failed sync) also states the failure
#: as `error` or `error_contains` (a substring of the error's message); a case stating a field its
#: kind does not observe FAILs naming it. Provenance fields are accepted anywhere, never compared.
ERROR_FIELDS = ("error", "error_contains")  # `error`: upstream's assert.ErrorContains; both substrings
_STABILIZED = ("stabilized_replicas", "recommendations_length_after", "recommendation_values_after")
EXPECTED: dict[str, tuple[str, ...]] = {
    "replica_calculator": ("replicas", "usage_milli", "raw_average_milli", "utilization_percent", "timestamp",
                           *ERROR_FIELDS),
    "group_pods": ("ready_pod_count", "unready_pods", "missing_pods", "ignored_pods"),
    "calculate_requests": ("requests_milli", *ERROR_FIELDS),
    "convert_desired_replicas_with_rules": ("replicas", "reason"),
    "stabilize_recommendation_legacy": _STABILIZED,
    "behavior_rate_limit": ("replicas", "reason"),
    "scale_limit_with_rules": ("limit_replicas",),
    "store_scale_event": ("replica_change_in_last_60s_before_store", "events_after"),
    "behavior_stabilization": _STABILIZED,
    "controller_reconcile": (
        "status_desired_replicas", "status_current_replicas", "status_cpu_current_utilization_percent",
        "status_update", "conditions", "events", "event_reasons", "event_created", "scale_updated",
        "scale_updated_to", "reconcile_returns_error", *ERROR_FIELDS),
}  # fmt: skip


def undeclared_expected(kind: str, expected: Iterable[str]) -> list[str]:
    """Expected fields of a case of `kind` that its answer does not carry (sorted)."""
    return sorted(set(expected) - set(EXPECTED.get(kind, ())) - PROVENANCE_FIELDS)


# Maps whose keys are data (label names, pod names, failure names), not fields.
_MAPS = re.compile(r"(?:.*\.)?(?:labels|matchLabels)|metrics|failures")


@lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> re.Pattern[str]:
    parts = (re.escape(p).replace(r"\*", r"[^.]*") for p in patterns)
    return re.compile("|".join(f"(?:{p})" for p in parts))


def _paths(value: Any, prefix: str, maps: re.Pattern[str]) -> Iterator[str]:
    if isinstance(value, dict):
        is_map = bool(prefix) and maps.fullmatch(prefix) is not None
        for key, child in value.items():
            name = "*" if is_map else str(key)
            path = f"{prefix}.{name}" if prefix else name
            yield path
            yield from _paths(child, path, maps)
    elif isinstance(value, list):
        for child in value:
            if isinstance(child, dict | list):
                yield f"{prefix}[]"
                yield from _paths(child, f"{prefix}[]", maps)


def unknown_fields(kind: str, inputs: Any) -> list[str]:
    """Input paths of a case of `kind` that this runner does not honour (sorted, unique)."""
    allowed = _compile(ALLOWED.get(kind, ()))
    return sorted({p for p in _paths(inputs, "", _MAPS) if allowed.fullmatch(p) is None})


def unknown_case_keys(keys: Iterable[str]) -> list[str]:
    return sorted(set(keys) - CASE_KEYS)
