"""The generated reference pages (docs/reference/, the chart README's values table) are what their
sources give today, and the generators refuse sources that disagree: a value without a comment,
a documented value the schema does not know, a schema property values.yaml lacks. A page left
stale after a flag, a value or a CRD field changed fails here, naming `make docs-ref`."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from hack.docs_ref import crd, flags, pages, values
from tests.paths import REPO

CHART = REPO / "charts/prom-autoscaler"
SCHEMA = {"type": "object", "additionalProperties": False, "properties": {
    "replicas": {"type": "integer"},
    "image": {"type": "object", "properties": {"tag": {"type": "string"}, "pullPolicy": {"type": "string"}}},
    "resources": {"type": "object"},
}}
VALUES = """\
# -- Pods of the adapter.
replicas: 2
image:
  # -- Image tag; empty means the chart's
  # appVersion.
  tag: ""
  # -- Pull policy.
  pullPolicy: IfNotPresent
# -- Container resources.
resources:
  limits:
    memory: 512Mi
"""


def test_every_generated_page_is_up_to_date() -> None:
    assert pages.stale() == [], "regenerate with `make docs-ref` (python -m hack.docs_ref)"


def test_values_rows_carry_path_type_default_and_the_whole_comment() -> None:
    rows = values.rows(VALUES, SCHEMA)
    assert [(r.path, r.type, r.default) for r in rows] == [
        ("replicas", "integer", "2"), ("image.tag", "string", '""'), ("image.pullPolicy", "string", '"IfNotPresent"'),
        ("resources", "object", '{"limits":{"memory":"512Mi"}}')]
    assert rows[1].text == "Image tag; empty means the chart's appVersion."


@pytest.mark.parametrize(("values_text", "schema", "problem"), [
    (VALUES.replace("  # -- Pull policy.\n", ""), SCHEMA,
     "image.pullPolicy: set in values.yaml without a `# --` comment"),
    (VALUES + "# -- Renamed.\nreplicaCount: 1\n", SCHEMA,
     "replicaCount: documented in values.yaml but not in values.schema.json"),
    (VALUES, {**SCHEMA, "properties": {**SCHEMA["properties"], "podLabels": {"type": "object"}}},
     "podLabels: in values.schema.json but not in values.yaml"),
], ids=["value-without-comment", "value-unknown-to-schema", "schema-property-missing-from-values"])
def test_values_and_schema_that_disagree_are_refused_naming_the_path(values_text: str, schema: dict, problem: str) -> None:
    with pytest.raises(values.ValuesDocError) as refused:
        values.rows(values_text, schema)
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_the_values_page_lists_every_value_of_the_schema_or_an_object_above_it() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    page = (REPO / "docs/reference/values.md").read_text()
    rows = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    leaves = [".".join(p) for p in values._schema_paths(schema) if p[0] not in values.SCHEMA_ONLY]
    uncovered = [leaf for leaf in leaves
                 if not any(leaf == row or leaf.startswith(row + ".") for row in rows)]
    assert uncovered == [] and len(rows) > 150


def test_a_new_flag_appears_in_the_flag_table_with_its_default_and_help() -> None:
    parser = argparse.ArgumentParser(prog="x")
    group = parser.add_argument_group("Prometheus", "How the Prometheus API is reached.")
    group.add_argument("--prometheus-timeout", metavar="DURATION", default="30s", help="per call (default %(default)s)")
    group.add_argument("--insecure", action="store_true", help="no <verification>")
    text = flags.tables(parser, 3)
    assert "### Prometheus\n\nHow the Prometheus API is reached." in text
    assert "| `--prometheus-timeout DURATION` | `30s` | per call (default 30s) |" in text
    assert "| `--insecure` |  | no &lt;verification&gt; |" in text


def test_the_controller_flag_page_names_every_run_flag() -> None:
    from controller.options import build_parser

    page = (REPO / "docs/reference/controller-flags.md").read_text()
    names = {s for a in build_parser()._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
    assert names and [n for n in names if f"`{n} " not in page and f"`{n}`" not in page] == []


def test_crd_fields_are_listed_with_type_default_bounds_and_requiredness() -> None:
    crd_doc = yaml.safe_load((CHART / "crds/promautoscalers.yaml").read_text())
    spec = crd_doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["cooldownHint"] = {"type": "integer", "minimum": 3, "default": 15, "description": "A | b"}
    text = crd.page(crd_doc)
    assert "| `spec.cooldownHint` | integer | `15` | ≥ 3 | A \\| b |" in text
    assert "| `spec.maxReplicas` | integer (required) |  | ≥ 1 |" in text
    assert "| `spec.metrics[].type` | string (required) |" in text
    assert "| PREDICTED | `.status.prediction.replicas` | `-o wide` |" in text
