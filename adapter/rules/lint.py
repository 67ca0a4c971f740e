"""Warnings for rules that load but will misbehave at query time.

Job: find, without talking to Prometheus, the mistakes prometheus-adapter users hit at runtime —
an empty `metricsQuery`, nothing mapping `namespaces` for a namespaced metric (the "no generic
resource label form specified" 404/500), `{{ }}` written where `<< >>` is meant, `$1_suffix`
expanding to "", overrides naming resources the cluster may not have — and notes on caveats
(queries that ignore `<<.LabelMatchers>>`). Non-goals: load errors (those are `ConfigError`s);
checks that need series (check-config does those with `--prometheus-url`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from adapter.rules.compile import CompiledConfig, CompiledResourceQuery, CompiledRule, RuleKind, RuleRef
from adapter.rules.resources import (
    NAMESPACES, NODES, PODS, GroupResource, ResourceTable, is_root_scoped_for_discovery,
    is_valid_label_name,
)  # fmt: skip

__all__ = ["Finding", "Severity", "lint_config", "lint_rule"]

_Add = Callable[..., None]  # add(field, message, severity=WARNING) for the rule being linted


class Severity(StrEnum):
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    ref: RuleRef
    field: str
    severity: Severity
    message: str

    def __str__(self) -> str:
        where = f"{self.ref}.{self.field}" if self.field else str(self.ref)
        return f"{self.severity}: {where}: {self.message}"


def lint_config(compiled: CompiledConfig) -> tuple[Finding, ...]:
    findings: list[Finding] = []
    for rule in (*compiled.custom, *compiled.external):
        findings.extend(lint_rule(rule))
    if compiled.resource is not None:
        for query in (compiled.resource.cpu, compiled.resource.memory):
            findings.extend(_lint_resource(query))
    return tuple(findings)


def lint_rule(rule: CompiledRule) -> list[Finding]:
    out: list[Finding] = []

    def add(field: str, message: str, severity: Severity = Severity.WARNING) -> None:
        out.append(Finding(ref=rule.ref, field=field, severity=severity, message=message))

    query = rule.rule.metrics_query
    if not query:
        add("metricsQuery", "metricsQuery is empty: discovery lists the metric, but every request "
            "fails with \"empty query produced by metrics query template\"")  # fmt: skip
    if "{{" in query:
        add("metricsQuery", "contains `{{ ... }}`: adapter templates use << >>, so this text is sent "
            "to Prometheus literally (an unrendered Helm/Ansible/Go template?)")  # fmt: skip
    if query and not rule.query_template.references("LabelMatchers"):
        add("metricsQuery", "does not use <<.LabelMatchers>>: the namespace, object names and metric "
            "selector of a request do not narrow the query", Severity.NOTE)  # fmt: skip
    _lint_name(rule, add)
    _lint_label_values(rule, add)
    _lint_namespace(rule, add)
    _lint_overrides(rule.mapper.overrides, rule.mapper.table, add)
    if rule.kind is RuleKind.CUSTOM and rule.rule.resources.namespaced is not None:
        add("resources.namespaced", "only external rules use `namespaced`; it is ignored here",
            Severity.NOTE)  # fmt: skip
    return out


def _lint_name(rule: CompiledRule, add: _Add) -> None:
    template = rule.name_as
    for match in re.finditer(r"\$(\{[^}]*\}|[A-Za-z0-9_]+)", template.replace("$$", "")):
        token = match.group(1).strip("{}")
        exists = token in rule.name_pattern.groupindex or (
            token.isdigit() and int(token) <= rule.name_pattern.groups
        )
        if not exists:
            hint = re.sub(r"^(\d+)(.*)$", r"${\1}\2", token)
            add("name.as", f"${token} refers to a capture group {token!r} that does not exist, "
                f"so it expands to \"\" (Go reads the longest name); write {hint!r}?")  # fmt: skip


def _lint_label_values(rule: CompiledRule, add: _Add) -> None:
    """`index .LabelValuesByName "pod"` is "" unless `pod` is the label of the namespace or of the
    requested resource (or a metric-selector key): flag keys this rule never maps."""
    mapper = rule.mapper
    for key in rule.query_template.index_keys("LabelValuesByName"):
        if mapper.resource_for_label(key) is not None:
            continue
        hint = ""
        namespace_label = mapper.label_or_none(NAMESPACES)
        pod_label = mapper.label_or_none(PODS)
        if namespace_label or pod_label:
            hint = f" (here namespaces -> {namespace_label or 'unmapped'}, pods -> {pod_label or 'unmapped'})"
        add("metricsQuery", f".LabelValuesByName {key!r}: no resource maps to label {key!r} in this "
            f"rule{hint}, so it is \"\" unless the request's metric selector has that key")  # fmt: skip


def _lint_namespace(rule: CompiledRule, add: _Add) -> None:
    if rule.kind is RuleKind.CUSTOM and not rule.mapper.overrides and not rule.mapper.has_template:
        add("resources", "no overrides and no template: discovery attaches this rule's series to no "
            "object, so custom.metrics.k8s.io never lists its metrics")  # fmt: skip
        return
    if rule.mapper.label_or_none(NAMESPACES) is not None:
        return
    if rule.kind is RuleKind.EXTERNAL:
        if rule.namespaced:
            add("resources", "nothing maps the `namespaces` resource to a label and `namespaced` is "
                "not false: every request (they always carry a namespace) fails with \"no generic "
                "resource label form specified for this metric\"; add a namespace override, a "
                "template, or `namespaced: false`")  # fmt: skip
        return
    needs_namespace = rule.mapper.has_template or any(
        not is_root_scoped_for_discovery(target) for target in rule.mapper.overrides.values()
    )
    if needs_namespace:
        add("resources", "nothing maps the `namespaces` resource to a label: requests for "
            "namespaced objects fail with \"no generic resource label form specified for this "
            "metric\" (404); add e.g. `overrides: {namespace: {resource: namespace}}`")  # fmt: skip


def _lint_overrides(overrides: Mapping[str, GroupResource], table: ResourceTable, add: _Add) -> None:
    for label, target in overrides.items():
        field = f"resources.overrides.{label}"
        if not is_valid_label_name(label):
            add(field, f"{label!r} is not a valid Prometheus label name; it can never match")
        if table.normalize(target.group, target.resource) is None:
            add(field, f"{target} is not a built-in resource: it must exist in the cluster "
                "(prometheus-adapter refuses to start when it does not)", Severity.NOTE)  # fmt: skip


def _lint_resource(query: CompiledResourceQuery) -> list[Finding]:
    out: list[Finding] = []

    def add(field: str, message: str, severity: Severity = Severity.WARNING) -> None:
        out.append(Finding(ref=query.ref, field=field, severity=severity, message=message))

    rule = query.rule
    for field, text in (("containerQuery", rule.container_query), ("nodeQuery", rule.node_query)):
        if not text:
            add(field, f"{field} is empty: every {'pod' if field == 'containerQuery' else 'node'} "
                "metrics request fails")  # fmt: skip
    if not rule.container_label:
        add("containerLabel", "containerLabel is empty: pod metrics cannot be split by container")
    for resource, why in ((PODS, "pod"), (NODES, "node"), (NAMESPACES, "namespace")):
        if query.mapper.label_or_none(resource) is None:
            add("resources", f"nothing maps {resource} to a label: {why} metrics cannot be queried")
    _lint_overrides(query.mapper.overrides, query.mapper.table, add)
    return out

