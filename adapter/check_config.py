"""`python -m adapter check-config FILE [--prometheus-url URL]`: validate a rule file and explain it.

Job: print every load error (exit 1), or a per-rule summary — which series each rule considers,
how it names metrics, which resources it maps, the PromQL template and an example rendering —
with warnings for rules that load but will fail at query time. With `--prometheus-url` it also
runs each distinct `seriesQuery` (synchronously, with `prometheus-api-client`) and reports per
rule how many series matched, which were filtered out and why, and which metrics and resources
they yield: the answer to "why doesn't my metric show up?". Exit status: 0 OK (warnings allowed),
1 config errors, 2 Prometheus could not be queried. Non-goals: serving anything.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from kubecommon.selectors import Selector

from adapter.config import ConfigError, load_config
from adapter.prometheus.settings import parse_duration as parse_flag_duration, parse_header_args
from adapter.rules import query
from adapter.rules.compile import CompiledConfig, CompiledResourceQuery, CompiledRule, RuleKind, compile_config
from adapter.rules.lint import Finding, Severity, lint_config
from adapter.rules.resources import NAMESPACES, PODS, GroupResource, is_root_scoped_for_discovery

__all__ = ["RuleReport", "build_parser", "explain_series", "main", "report_lines", "summarize_blocks"]

_EXAMPLE_NAME = re.compile(r'^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)|__name__\s*=\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"')


def main(argv: Sequence[str]) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `check-config ... | head`: stop quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def build_parser() -> argparse.ArgumentParser:
    """The flags of `check-config` (also read by the docs' generated flag reference)."""
    parser = argparse.ArgumentParser(prog="python -m adapter check-config", description=__doc__.split("\n")[0])
    parser.add_argument("file", help="the prometheus-adapter rule file (--config)")
    parser.add_argument("--prometheus-url", help="also run each seriesQuery against this Prometheus")
    parser.add_argument("--metrics-max-age", default="10m",
                        help="discovery window for --prometheus-url (default 10m, as the adapter's relist)")
    parser.add_argument("--prometheus-token-file", help="bearer token file for Prometheus")
    parser.add_argument("--prometheus-header", action="append", default=[], metavar="KEY=VALUE",
                        help="extra request header, e.g. X-Scope-OrgID=tenant (repeatable)")
    parser.add_argument("--prometheus-ca-file", help="CA bundle for Prometheus' TLS")
    parser.add_argument("--prometheus-client-tls-cert-file", help="client certificate for mutual TLS")
    parser.add_argument("--prometheus-client-tls-key-file", help="client key for mutual TLS")
    parser.add_argument("--insecure-skip-tls-verify", action="store_true")
    parser.add_argument("--timeout", default="30s", help="per-request timeout (default 30s)")
    parser.add_argument("-q", "--quiet", action="store_true", help="hide notes, show warnings only")
    return parser


def _main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    try:
        compiled = compile_config(load_config(args.file))
    except ConfigError as err:
        print(f"error: {args.file} cannot be used:", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    findings = lint_config(compiled)
    print_summary(compiled, findings, sys.stdout, quiet=args.quiet)
    if args.prometheus_url:
        try:
            # the adapter's own flag syntax (Go durations or bare seconds), not the rule file's
            max_age = parse_flag_duration(args.metrics_max_age, flag="--metrics-max-age")
            timeout = parse_flag_duration(args.timeout, flag="--timeout")
            if timeout <= 0:
                raise ValueError(f"--timeout: must be positive, got {args.timeout!r}")
            headers = parse_header_args(args.prometheus_header)
        except ValueError as err:
            parser.error(str(err))
        return _live(compiled, args, max_age=max_age, timeout=timeout, headers=headers)
    return 0


# --- static summary -------------------------------------------------------------------------


def summarize_blocks(compiled: CompiledConfig) -> list[tuple[str, list[str]]]:
    """(rule location, lines) per rule, headline first with location "" (pure)."""
    blocks: list[tuple[str, list[str]]] = [("", [_headline(compiled)])]
    for rule in (*compiled.custom, *compiled.external):
        blocks.append((rule.ref.location, _rule_lines(rule)))
    if compiled.resource is not None:
        blocks.append(("resourceRules", [f"resourceRules (metrics.k8s.io, window {compiled.resource.window or '0s'})"]))
        for rq in (compiled.resource.cpu, compiled.resource.memory):
            blocks.append((rq.ref.location, _resource_lines(rq)))
    return blocks


def print_summary(compiled: CompiledConfig, findings: Sequence[Finding], out: TextIO, *, quiet: bool = False) -> None:
    by_ref: dict[str, list[Finding]] = {}
    for finding in findings:
        if not (quiet and finding.severity is Severity.NOTE):
            by_ref.setdefault(finding.ref.location, []).append(finding)
    for location, lines in summarize_blocks(compiled):
        if location and not location.startswith("resourceRules."):
            print("", file=out)
        for line in lines:
            print(line, file=out)
        for finding in by_ref.get(location, []):
            prefix = f"{finding.field}: " if finding.field else ""
            print(f"  {finding.severity}: {prefix}{finding.message}", file=out)
    warnings = sum(f.severity is Severity.WARNING for f in findings)
    print(f"\n{compiled.source}: loads; {warnings} warning(s)", file=out)


def _headline(compiled: CompiledConfig) -> str:
    parts = [f"{len(compiled.custom)} custom rule(s) (custom.metrics.k8s.io)",
             f"{len(compiled.external)} external rule(s) (external.metrics.k8s.io)"]
    parts.append("resource rules (metrics.k8s.io)" if compiled.resource else "no resource rules")
    queries = len(compiled.series_queries)
    return f"{compiled.source}: " + ", ".join(parts) + f"; {queries} distinct seriesQuery per relist"


def _example_series(rule: CompiledRule) -> str | None:
    match = _EXAMPLE_NAME.search(rule.series_query)
    name = (match.group(1) or match.group(2)) if match else None
    return name if name and rule.accepts_series(name) else None


def _rule_lines(rule: CompiledRule) -> list[str]:
    r = rule.rule
    lines = [f"{rule.ref.location} ({rule.kind}) seriesQuery: {rule.series_query}"]
    filters = [f"{'is' if f.is_ else 'isNot'} /{f.is_ or f.is_not}/" for f in r.series_filters]
    if r.name.matches:
        filters.append(f"is /{r.name.matches}/ (from name.matches)")
    lines.append(f"  series filters: {', '.join(filters) or 'none'}")
    naming = f"/{r.name.matches or '.*'}/ -> {rule.name_as!r}"
    example = _example_series(rule)
    if example:
        naming += f"  (e.g. {example} -> {rule.metric_name(example) or '(empty: not exposed)'})"
    lines.append(f"  metric name: {naming}")
    mapping = _mapping_text(rule)
    if rule.kind is RuleKind.EXTERNAL and not rule.mapper.overrides and rule.mapper.template is None:
        mapping = "none"
    lines.append(f"  resources: {mapping}")
    if rule.kind is RuleKind.EXTERNAL:
        lines.append(f"  namespaced: {str(rule.namespaced).lower()} "
                     f"({'adds' if rule.namespaced else 'does not add'} the request namespace)")
    lines.append(f"  metricsQuery: {' '.join(r.metrics_query.split()) or '(empty)'}")
    lines.append(f"  example: {_example_query(rule, example)}")
    return lines


def _mapping_text(rule: CompiledRule | CompiledResourceQuery) -> str:
    parts = [f"{label} -> {target}" for label, target in rule.mapper.overrides.items()]
    if rule.mapper.template is not None:
        parts.append(f"template {rule.mapper.template.source!r}")
    return ", ".join(parts) or "none (no overrides, no template: the metric attaches to no object)"


_SERIES_STAND_IN = "__series__"  # a classic metric name (the renderer takes no other), shown as <series>


def _example_query(rule: CompiledRule, example: str | None) -> str:
    if example:
        return _render_example(rule, example)
    return _render_example(rule, _SERIES_STAND_IN).replace(_SERIES_STAND_IN, "<series>")


def _render_example(rule: CompiledRule, series: str) -> str:
    try:
        if rule.kind is RuleKind.EXTERNAL:
            promql = query.render_external(rule, series_name=series, namespace="default",
                                           metric_selector=Selector.empty())
            return f"(namespace default) {' '.join(promql.split())}"
        resource = _example_resource(rule)
        namespace = None if is_root_scoped_for_discovery(resource) else "default"
        promql = query.render_custom(rule, series_name=series, resource=resource, namespace=namespace,
                                     names=["example"], metric_selector=Selector.empty())
        where = f" in namespace {namespace}" if namespace else ""
        return f"({resource} example{where}) {' '.join(promql.split())}"
    except query.QueryError as err:
        return f"FAILS: {err}"


def _example_resource(rule: CompiledRule) -> GroupResource:
    targets = [t for t in rule.mapper.overrides.values() if t != NAMESPACES]
    return targets[0] if targets else (PODS if rule.mapper.has_template else NAMESPACES)


def _resource_lines(rq: CompiledResourceQuery) -> list[str]:
    lines = [f"  {rq.ref.location}: containerLabel {rq.container_label or '(empty)'}; resources: {_mapping_text(rq)}"]
    for level, names, ns in (("container", ["example-pod"], "default"), ("node", ["example-node"], None)):
        try:
            promql = query.render_resource_query(rq, level=level, namespace=ns, names=names)  # type: ignore[arg-type]
            lines.append(f"    {level} example: {' '.join(promql.split())}")
        except query.QueryError as err:
            lines.append(f"    {level} example: FAILS: {err}")
    return lines


# --- live check against Prometheus ------------------------------------------------------------


@dataclass(slots=True)
class RuleReport:
    """What one rule makes of the series its seriesQuery returned."""

    matched: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    rejected_examples: dict[str, str] = field(default_factory=dict)
    no_resource: int = 0
    no_resource_example: Mapping[str, str] | None = None
    exposed: dict[tuple[str, str, bool], int] = field(default_factory=dict)
    """(metric, resource, namespaced) -> series count; for external rules resource is ""."""


def explain_series(rule: CompiledRule, series: Sequence[Mapping[str, str]]) -> RuleReport:
    """Run one rule over discovered label sets, recording why series are dropped (pure)."""
    report = RuleReport(matched=len(series))
    for labels in series:
        name = labels.get("__name__", "")
        reason = _rejection(rule, name)
        if reason:
            report.rejected[reason] += 1
            report.rejected_examples.setdefault(reason, name)
            continue
        metric = rule.metric_name(name) or ""
        if rule.kind is RuleKind.EXTERNAL:
            key = (metric, "", True)
            report.exposed[key] = report.exposed.get(key, 0) + 1
            continue
        resources = rule.resources_for([k for k in labels if k != "__name__"])
        if not resources:
            report.no_resource += 1
            report.no_resource_example = report.no_resource_example or labels
        for resource in resources:
            key = (metric, str(resource), not is_root_scoped_for_discovery(resource))
            report.exposed[key] = report.exposed.get(key, 0) + 1
    return report


def _rejection(rule: CompiledRule, name: str) -> str:
    # The name filter (last) exists only when name.matches is set, so `filters` may be one shorter.
    for f, spec in zip(rule.filters, [*rule.rule.series_filters, None], strict=False):
        if not f.matches(name):
            if spec is None:
                return f"name does not match name.matches /{rule.rule.name.matches}/"
            return f"seriesFilters {'is' if spec.is_ else 'isNot'} /{spec.is_ or spec.is_not}/"
    if not rule.expand_name(name):
        return f"name.as {rule.name_as!r} expands to an empty name"
    return ""


def _live(compiled: CompiledConfig, args: argparse.Namespace, *, max_age: float, timeout: float,
          headers: tuple[tuple[str, str], ...]) -> int:
    from adapter import check_config_live as live  # the I/O edge (prometheus-api-client)

    print(f"\nQuerying {args.prometheus_url} for series seen in the last {args.metrics_max_age}:")
    conn = live.Connection(
        url=args.prometheus_url, timeout=timeout, token_file=args.prometheus_token_file, headers=headers,
        ca_file=args.prometheus_ca_file, client_cert_file=args.prometheus_client_tls_cert_file,
        client_key_file=args.prometheus_client_tls_key_file, insecure=args.insecure_skip_tls_verify,
    )  # fmt: skip
    series_by_query, failed = live.fetch_series(conn, compiled.series_queries, end=time.time(), max_age=max_age)
    for rule in (*compiled.custom, *compiled.external):
        print("")
        if rule.series_query in failed:
            print(f"{rule.ref.location}: seriesQuery failed: {failed[rule.series_query]}")
            continue
        for line in report_lines(rule, explain_series(rule, series_by_query[rule.series_query])):
            print(line)
    for line in live.registry_lines(compiled, series_by_query):
        print(line)
    return 2 if failed else 0


def report_lines(rule: CompiledRule, report: RuleReport) -> list[str]:
    lines = [f"{rule.ref.location}: seriesQuery matched {report.matched} series"]
    if not report.matched:
        lines.append("  nothing matched: check the metric name and label matchers in the Prometheus UI, "
                     "and that the series had samples within --metrics-max-age")
    for reason, count in report.rejected.most_common():
        lines.append(f"  {count} dropped: {reason} (e.g. {report.rejected_examples[reason]})")
    if report.no_resource:
        example = dict(report.no_resource_example or {})
        lines.append(f"  {report.no_resource} carry no label this rule maps to a resource "
                     f"({_mapping_text(rule)}), so they attach to no object; e.g. {example}")
    for (metric, resource, namespaced), count in sorted(report.exposed.items()):
        if rule.kind is RuleKind.EXTERNAL:
            lines.append(f"  exposes external metric {metric} ({count} series)")
        else:
            scope = "namespaced" if namespaced else "cluster-scoped"
            lines.append(f"  exposes {resource}/{metric} ({scope}, {count} series)")
    return lines
