"""GroupResource values, the static resource table, and label <-> resource mapping
(resource_converter.go / lbl_res.go semantics)."""

from __future__ import annotations

import pytest

from adapter.rules.resources import (
    DEFAULT_TABLE, GroupResource, NoLabelForResource, ResourceTable, is_root_scoped_for_discovery,
    sanitize_group,
)  # fmt: skip
from tests.unit.adapter.rules.helpers import compile_text


@pytest.mark.parametrize(("text", "group", "resource"), [
    pytest.param("pods", "", "pods", id="core"),
    pytest.param("deployments.apps", "apps", "deployments", id="group"),
    pytest.param("ingresses.networking.k8s.io", "networking.k8s.io", "ingresses", id="dotted group"),
])
def test_group_resource_parse_and_str(text: str, group: str, resource: str) -> None:
    parsed = GroupResource.parse(text)
    assert (parsed.group, parsed.resource) == (group, resource)
    assert str(parsed) == text


@pytest.mark.parametrize(("group", "resource", "expected"), [
    pytest.param("", "pod", "pods", id="singular"), pytest.param("", "Pod", "pods", id="kind"),
    pytest.param("", "po", "pods", id="short name"), pytest.param("", "namespace", "namespaces", id="namespace"),
    pytest.param("", "deployment", "deployments.apps", id="group found without being given"),
    pytest.param("apps", "deployments", "deployments.apps", id="plural with group"),
    pytest.param("", "ingress", "ingresses.networking.k8s.io", id="ingress resolves to networking"),
    pytest.param("networking.k8s.io", "ingress", "ingresses.networking.k8s.io", id="ingress with group"),
    pytest.param("", "job", "jobs.batch", id="batch"),
])
def test_normalisation_through_the_static_table(group: str, resource: str, expected: str) -> None:
    assert str(DEFAULT_TABLE.normalize(group, resource)) == expected


def test_unknown_resources_pass_through_lower_cased_only_when_asked() -> None:
    assert DEFAULT_TABLE.normalize("cheese.io", "Brand") is None
    assert DEFAULT_TABLE.normalize_or_pass("cheese.io", "Brand") == GroupResource("cheese.io", "brands")
    assert DEFAULT_TABLE.normalize_or_pass("cheese.io", "brands") == GroupResource("cheese.io", "brands")
    assert DEFAULT_TABLE.normalize_or_pass("example.com", "Policy") == GroupResource("example.com", "policies")
    assert DEFAULT_TABLE.normalize_or_pass("extensions", "ingress") == GroupResource("extensions", "ingresses")
    assert DEFAULT_TABLE.normalize("batch", "deployments") is None  # wrong group


def test_table_from_discovery_rows() -> None:
    table = ResourceTable.from_kinds([{"group": "extensions", "kind": "Ingress", "resource": "ingresses"}])
    assert table.normalize("", "ingress") == GroupResource("extensions", "ingresses")
    assert table.singular(GroupResource("extensions", "ingresses")) == "ingress"


def test_discovery_scope_quirk() -> None:
    assert [is_root_scoped_for_discovery(GroupResource.parse(t)) for t in
            ("namespaces", "nodes", "persistentvolumes", "pods", "deployments.apps")] == [True, True, True, False, False]


def test_group_sanitiser() -> None:
    assert sanitize_group("networking.k8s.io") == "networking_k8s_io" and sanitize_group("a-b") == "a_b"


MAPPER = """
rules:
- seriesQuery: up
  metricsQuery: up
  resources:
    template: 'kube_<<.Group>>_<<.Resource>>'
    overrides:
      exported_namespace: {resource: namespace}
      microservice: {group: apps, resource: deployment}
"""


def test_overrides_win_over_the_template() -> None:
    rule = compile_text(MAPPER).custom[0]
    assert rule.label_for(GroupResource("", "namespaces")) == "exported_namespace"
    assert rule.label_for(GroupResource("apps", "deployments")) == "microservice"
    assert rule.label_for(GroupResource("", "pods")) == "kube__pod"
    assert rule.label_for(GroupResource("networking.k8s.io", "ingresses")) == "kube_networking_k8s_io_ingress"


def test_labels_resolve_through_overrides_then_the_template_pattern() -> None:
    rule = compile_text(MAPPER).custom[0]
    assert rule.resource_for_label("exported_namespace") == GroupResource("", "namespaces")
    assert rule.resource_for_label("kube_apps_statefulset") == GroupResource("apps", "statefulsets")
    # the lazy group capture cannot split multi-word groups, as upstream (documented quirk)
    assert rule.resource_for_label("kube_networking_k8s_io_ingress") is None
    assert rule.resource_for_label("kube_x_device") is None  # not a resource: skipped
    assert rule.resource_for_label("namespace") is None


def test_no_template_and_no_override_means_no_label() -> None:
    rule = compile_text("rules:\n- seriesQuery: up\n  metricsQuery: up\n").custom[0]
    assert rule.label_for(GroupResource("", "namespaces")) is None
    with pytest.raises(NoLabelForResource, match="no generic resource label form specified for this metric"):
        rule.mapper.label_for(GroupResource("", "namespaces"))
    assert rule.resources_for({"namespace": "x", "pod": "y"}) == ()


def test_plain_resource_template_maps_every_known_label() -> None:
    rule = compile_text("rules:\n- seriesQuery: up\n  metricsQuery: up\n  resources: {template: <<.Resource>>}\n").custom[0]
    assert rule.resources_for(["namespace", "pod", "job", "instance", "le"]) == (
        GroupResource("", "namespaces"), GroupResource("", "pods"), GroupResource("batch", "jobs"))
