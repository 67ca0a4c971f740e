"""The one table of deliberate deviations from upstream, for both conformance runners (the
adapter's from prometheus-adapter, the controller's from the Kubernetes HPA controller): each names
what we do differently and why, and carries a normaliser mapping our answer to what upstream would
answer without the deviation. A failing case is reported `SKIP id: deviation <name>: <reason>` only
when the normalised answer meets the case's expectation (`excusing`), so a deviation can never hide
an unrelated bug. A deviation whose normaliser keeps our answer as it is excuses nothing: it is
listed for reviewers, no public case exercises it.

Non-goals: running or checking cases (runner, adapter_runner, controller_runner, checker modules).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from hack.conformance.controller_reconcile import as_upstream, is_reconcile_case
from hack.conformance import deviation_normalisers as norm

__all__ = ["DEVIATIONS", "LOG_DEVIATIONS", "Deviation", "excusing"]

Component = Literal["adapter", "controller"]


def _every_case(case: Mapping[str, Any]) -> bool:
    return True


def _as_ours(got: Any, case: Mapping[str, Any]) -> Any:
    """No normaliser: the deviation is documented, no case encodes it, it excuses nothing."""
    return got


@dataclass(frozen=True, slots=True, kw_only=True)
class Deviation:
    component: Component
    name: str
    reason: str
    normalise: Callable[[Any, Mapping[str, Any]], Any]
    """Maps our answer to what upstream would answer if the deviation did not exist."""
    applies: Callable[[Mapping[str, Any]], bool] = _every_case


def excusing(component: Component, case: Mapping[str, Any], got: Any,
             meets: Callable[[Any], bool]) -> Deviation | None:
    """The first of `component`'s deviations that applies to `case` and whose normaliser turns our
    answer `got`, which does not meet the expectation, into one that does (`meets`); else None."""
    if meets(got):
        return None
    for deviation in DEVIATIONS:
        try:
            if deviation.component == component and deviation.applies(case) \
                    and meets(deviation.normalise(got, case)):
                return deviation
        except Exception:  # noqa: BLE001 - a case shape a normaliser did not expect excuses nothing
            continue
    return None


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        component="adapter",
        name="regex-escaped-values",
        reason="object names and `in`/`notin` selector values are regex-escaped (RE2 QuoteMeta) "
        "inside =~/!~ matchers, so `ip-10-0-0-1.ec2.internal` or `in (a.b)` match only "
        "themselves; upstream pastes them in as raw regex (`.` matches any character).",
        normalise=norm.unescape_regex_values,
    ),
    Deviation(
        component="adapter",
        name="series-request-post-with-end",
        reason="discovery always POSTs /api/v1/series (form body, no 414 from long selectors "
        "behind proxies) and sends `end`=now explicitly; upstream GETs without `end`, which "
        "Prometheus treats as now. Same parameters otherwise (match[], start = now - max age).",
        normalise=norm.as_upstream_series_request,
        applies=norm.category("custom.discovery_http"),
    ),
    Deviation(
        component="adapter",
        name="query-timeout-param",
        reason="every instant query carries Prometheus' `timeout` parameter (--prometheus-timeout), so "
        "Prometheus stops work nobody will read; times are sent with millisecond decimals "
        "(`1565786045.000`), which Prometheus reads as the same instant. Upstream sends `timeout` "
        "only from a context deadline and writes times without trailing zeros. Series are POSTed "
        "with `end` (see series-request-post-with-end).",
        normalise=norm.as_upstream_client_url,
        applies=norm.category("prometheus_client"),
    ),
    Deviation(
        component="adapter",
        name="header-names-as-given",
        reason="--prometheus-header names are sent as written (`foo`), not canonicalised to "
        "`Foo`; HTTP header names are case-insensitive, so Prometheus and proxies see the same.",
        normalise=norm.canonical_header_names,
        applies=norm.category("cli.prometheus_header"),
    ),
    Deviation(
        component="adapter",
        name="no-kubeconfig-prometheus-auth",
        reason="--prometheus-auth-config / --prometheus-auth-incluster (a kubeconfig's transport "
        "for Prometheus) are refused with a message pointing at --prometheus-token-file and "
        "--prometheus-ca-file, which cover the same deployments without the kubernetes client "
        "on the request path.",
        normalise=lambda got, case: {"success": True}
        if isinstance(got, dict) and "not supported" in str(got.get("error", "")) else got,
        applies=lambda case: bool(case.get("input", {}).get("--prometheus-auth-config")
                                  or case.get("input", {}).get("--prometheus-auth-incluster")),
    ),
    Deviation(
        component="adapter",
        name="cpu-nanocores",
        reason="metrics.k8s.io CPU is reported in nano-cores like metrics-server (`250500u` is "
        "0.2505 cores); upstream truncates to millicores, so sub-millicore usage reads 0.",
        normalise=norm.milli_cpu,
        applies=norm.is_cpu_case,
    ),
    Deviation(
        component="adapter",
        name="half-measured-pod-left-out",
        reason="metrics.k8s.io leaves out a pod with a container that has only one of cpu and memory "
        "(or a NaN sample), as metrics-server serves a pod only when all its containers are measured; "
        "upstream writes 0 for what is missing, so kubectl top and the HPA sum a pod without that "
        "container's usage.",
        normalise=norm.half_measured_pods_as_zero,
        applies=norm.category("resource_metrics.pods"),
    ),
    Deviation(
        component="adapter",
        name="non-finite-values-left-out",
        reason="a custom or external metric sample of NaN or ±Inf (a ratio of rates with no traffic, x/0) is "
        "left out of the answer and counted (`..._dropped_samples_total`), so an HPA never scales on a "
        "number Prometheus could not compute; upstream serves custom NaN as 0 (its PR #308) and "
        "converts the rest unguarded, int64(v*1000) giving -9223372036854775808m (issue #280's symptom).",
        normalise=norm.non_finite_as_upstream,
        applies=norm.is_non_finite_value,
    ),
    Deviation(
        component="adapter",
        name="external-not-found-names-namespaces",
        reason="an unknown external metric is 404 `...could not find the metric <m> for "
        "namespaces` in every namespace; upstream drops the resource name outside `default` "
        "(`...for `), a quirk of its selectGroupResource.",
        normalise=lambda got, case: {**got, "message": got["message"].replace(" for namespaces", " for ")}
        if isinstance(got, dict) and "message" in got else got,
        applies=lambda case: case.get("category") == "external.errors"
        and "/namespaces/default/" not in case.get("input", {}).get("http", ""),
    ),
    Deviation(
        component="adapter",
        name="prometheus-5xx-is-503",
        reason="Prometheus answering 5xx (overloaded, restarting, a proxy in front of it) is a passing "
        "outage answered 503 ServiceUnavailable, like an unreachable or timed-out Prometheus, so "
        "clients see a retryable condition; upstream answers 500 InternalError 'unable to fetch "
        "metrics' for every failure.",
        normalise=lambda got, case: {**got, **norm.upstream_fetch_error(case)}
        if isinstance(got, dict) and got.get("code") == 503 else got,
        applies=norm.prometheus_5xx,
    ),
    Deviation(
        component="adapter",
        name="unsupported-selector-is-400",
        reason="a metric selector with `>`/`<` (which PromQL matchers cannot express) is the "
        "client's mistake: 400 BadRequest naming the operator; upstream answers 404 'could not "
        "find the metric' (custom) or 500 'unable to fetch metrics' (external).",
        normalise=norm.unsupported_selector_as_upstream,
        applies=lambda case: bool(re.search(r"(%3[CE]|[<>])", case.get("input", {}).get("http", ""))),
    ),
    Deviation(
        component="adapter",
        name="invalid-metric-selector-is-400",
        reason="a metricLabelSelector that does not parse is the client's mistake: 400 BadRequest with the "
        "parser's message, so kubectl and the HPA's event show a request to fix; upstream returns the parse "
        "error bare from its REST storage and the apiserver answers 500 with no reason, which reads as an "
        "adapter fault (an HPA reports FailedGetObjectMetric either way; it retries both alike).",
        normalise=norm.selector_error_as_upstream,
        applies=norm.has_metric_label_selector,
    ),
    Deviation(
        component="adapter",
        name="scalar-external-labels",
        reason="a scalar external-metric result is one item whose metricLabels is {} rather than "
        "null: the Prometheus client turns scalars into a sample with no labels, and clients that "
        "iterate metricLabels (the HPA ignores them) need no null check.",
        normalise=lambda got, case: {**got, "items": [{**i, "metricLabels": i.get("metricLabels") or None}
                                                      for i in got.get("items", [])]}
        if isinstance(got, dict) else got,
        applies=lambda case: case.get("input", {}).get("prometheus_result", {}).get("resultType") == "scalar",
    ),
    Deviation(
        component="adapter",
        name="result-type-named",
        reason="a Prometheus answer of the wrong result type (matrix, string) is a 500 InternalError "
        "Status `unable to fetch metrics: unexpected query result type 'matrix' (want vector or scalar)`, "
        "naming what came back; upstream's external provider answers a bare 500 with no reason and "
        "`encountered an unexpected query result type`.",
        normalise=lambda got, case: {"code": 500, "reason": "",
                                     "message": "encountered an unexpected query result type"}
        if isinstance(got, dict) and got.get("code") == 500
        and "unexpected query result type" in str(got.get("message")) else got,
        applies=lambda case: str(case.get("input", {}).get("prometheus_result", {}).get("resultType", "vector"))
        not in ("vector", "scalar"),
    ),
    Deviation(
        component="adapter",
        name="placeholder-discovery-entry",
        reason="with no metrics discovered yet, the APIResourceList holds one placeholder entry "
        "(`custommetrics` / `externalmetrics`) instead of none, so clients' discovery of the "
        "group does not fail while the first relist is pending.",
        normalise=lambda got, case: norm.without_placeholder(got),
        applies=lambda case: case.get("category", "").endswith(("discovery_list", "discovery")),
    ),
    Deviation(
        component="adapter",
        name="missing-metric-kept-one-relist",
        reason="a metric whose series are missing from one relist stays served (marked missing) "
        "and is dropped when it is missing again, so one scrape gap or a Prometheus restart does "
        "not turn an HPA's metric into 404 for a relist interval; upstream rebuilds the registry "
        "from each relist alone.",
        normalise=norm.without_kept_missing,
        applies=lambda case: isinstance(case.get("input", {}).get("relist_2"), list),
    ),
    Deviation(
        component="adapter",
        name="label-names-validated",
        reason="a metric-selector key that is not a Prometheus label name (e.g. "
        "`app.kubernetes.io/name`) is rejected with a 400 before querying; upstream sends the "
        "broken PromQL to Prometheus and answers 500/404.",
        normalise=_as_ours,
    ),
    Deviation(
        component="adapter",
        name="empty-metric-name-not-served",
        reason="a series whose `name.as` expands to \"\" (e.g. `$1_per_second`) is not registered: "
        "no API path can name it; upstream registers the empty name. Naming itself still "
        "expands to \"\" exactly as Go does (check-config warns about it).",
        normalise=_as_ours,
    ),
    Deviation(
        component="adapter",
        name="template-errors-at-load",
        reason="a metricsQuery that can never render (unknown field such as `<<.Foo>>`) fails at "
        "load with the rule named, instead of failing every query at runtime.",
        normalise=_as_ours,
    ),
    Deviation(
        component="adapter",
        name="unused-labels-never-fail",
        reason="a metricsQuery that reads nothing derived from the rule's labels (e.g. `series "
        "<<.Series>>`) is served even when the rule maps no label for the namespace or resource; "
        "upstream's Build looks both labels up first and fails the request (404) when its "
        "converter has no mapping, though the template would never print them.",
        normalise=_as_ours,
    ),
    Deviation(
        component="adapter",
        name="join-template-function",
        reason="templates may use `join` (not a Go builtin) to print a slice with a separator; "
        "upstream would reject such a template at start.",
        normalise=_as_ours,
    ),
    Deviation(
        component="controller", name="invalid-spec-never-synced", normalise=as_upstream, applies=is_reconcile_case,
        reason="a stored spec kube-apiserver refuses (minReplicas 0 without Object or External metrics, an untyped "
        "target) is never synced (InvalidSpec); upstream's controller syncs it. Normalised: read as upstream does.",
    ),
    Deviation(
        component="controller",
        name="zero-replicas-average-value",
        reason="Object/External AverageValue with status.replicas == 0: upstream divides by zero (+Inf/NaN "
        "into int64); we treat the ratio as +Inf (never within tolerance) and report the total as "
        "the average.",
        normalise=_as_ours,
    ),
    Deviation(
        component="controller",
        name="non-positive-target-is-metric-error",
        reason="A zero or negative target (API validation forbids it) is a metric error here instead of a "
        "division by zero.",
        normalise=_as_ours,
    ),
    Deviation(
        component="controller",
        name="no-metrics-invalid-source-type",
        reason="An autoscaler with no metrics (API defaulting adds cpu 80%) reports "
        "ScalingActive=False/InvalidMetricSourceType; upstream sets an empty condition.",
        normalise=_as_ours,
    ),
    Deviation(
        component="controller",
        name="condition-message-wording",
        reason="Message wording of the ambiguous-selector condition lists HPAs as namespace/name (which "
        "one to fix is unambiguous), and the object-metric fetch error reads 'unable to get metric M on "
        "Kind name: err' (upstream's format arguments are out of order, so its message names the wrong thing).",
        normalise=_as_ours,
    ),
    Deviation(
        component="controller",
        name="window-boundary-exclusive",
        reason="Window boundaries: a sample exactly W seconds old is outside every window (legacy "
        "stabilization included), the convention of the vectors, so every window follows one rule; "
        "upstream's legacy path compares with Before(cutoff), which differs only at the same nanosecond.",
        normalise=_as_ours,
    ),
)


#: Deviations in log wording, with the same contract as DEVIATIONS: each maps one of our log
#: lines to upstream's wording, and excuses a difference only when that reproduces the expectation.
LOG_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        component="adapter",
        name="prometheus-error-log-wording",
        reason="a failed Prometheus call is logged with what was asked and the answer's path and HTTP "
        "code (`unable to fetch metrics from prometheus (custom metric m for pods): /api/v1/query: "
        "HTTP 414: ...`); upstream logs its client's error type (`bad_response: unknown response code "
        "414`). Same event, same code; the client sees the same Status.",
        normalise=lambda line, expected: re.sub(
            r"^unable to fetch metrics from prometheus \([^)]*\): \S+: HTTP (\d+): .*$",
            lambda m: m.group(0) if m.group(1) in ("400", "422", "503")
            else f"unable to fetch metrics from prometheus: bad_response: unknown response code {m.group(1)}",
            line) if isinstance(line, str) else line,
    ),
)
