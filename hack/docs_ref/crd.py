"""The PromAutoscaler field reference, read from the CRD's openAPIV3Schema: one row per field of
`spec` and `status` (list items as `[]`), with its type, default, bounds and description, and the
columns `kubectl get pas` prints.

Non-goal: the validation rules' CEL text; their messages are what `kubectl apply` prints, and the
controller page lists the ones a user meets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

_BOUNDS = (("minimum", "≥ {}"), ("maximum", "≤ {}"), ("minItems", "at least {} items"),
           ("maxItems", "at most {} items"), ("minLength", "at least {} characters"),
           ("maxLength", "at most {} characters"), ("pattern", "matches `{}`"))


def _escape(text: str) -> str:
    return " ".join(text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").split())


def _type(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object" and "properties" not in schema and "additionalProperties" in schema:
        return f"map of {_type(schema['additionalProperties'])}"
    return kind


def _bounds(schema: dict[str, Any]) -> str:
    quantity = schema.get("x-kubernetes-int-or-string") and "pattern" in schema
    found = [text.format(schema[key]) for key, text in _BOUNDS
             if key in schema and not (quantity and key == "pattern")]
    if quantity:
        found.append("a quantity (`10`, `500m`, `1Gi`)")
    if "enum" in schema:
        found.append("one of " + ", ".join(f"`{value}`" for value in schema["enum"]))
    return "; ".join(found)


def _fields(schema: dict[str, Any], prefix: str, required: bool) -> Iterator[tuple[str, dict[str, Any], bool]]:
    yield prefix, schema, required
    items = schema.get("items")
    if isinstance(items, dict) and "properties" in items:
        schema, prefix = items, prefix + "[]"
    needed = set(schema.get("required", []))
    for key, sub in schema.get("properties", {}).items():
        yield from _fields(sub, f"{prefix}.{key}", key in needed)


def _table(schema: dict[str, Any], root: str) -> list[str]:
    lines = ["| field | type | default | bounds | meaning |", "| --- | --- | --- | --- | --- |"]
    for path, field, required in _fields(schema, root, False):
        if path == root:
            continue
        default = f"`{json.dumps(field['default'])}`" if "default" in field else ""
        kind = _type(field) + (" (required)" if required else "")
        lines.append(f"| `{path}` | {kind} | {default} | {_escape(_bounds(field))} | "
                     f"{_escape(field.get('description', ''))} |")
    return lines


def page(crd: dict[str, Any]) -> str:
    """The Markdown page for every version of the CRD."""
    names = crd["spec"]["names"]
    out = [f"# {names['kind']} field reference", "",
           f"Generated from `charts/prom-autoscaler/crds/promautoscalers.yaml` by `make docs-ref`; "
           f"`kubectl explain {names['plural']}.spec` prints the same descriptions from the cluster. "
           "The controller and PromAutoscaler page explains what the fields do together.", ""]
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        out += [f"## {crd['spec']['group']}/{version['name']}", "",
                f"Kind `{names['kind']}`, {crd['spec']['scope'].lower()}, plural `{names['plural']}`, "
                f"short names {', '.join(f'`{n}`' for n in names.get('shortNames', []))}; "
                f"subresources: {', '.join(f'`{s}`' for s in version.get('subresources', {}))}.", ""]
        for part in ("spec", "status"):
            out += [f"### {part}", "", _escape(schema["properties"][part].get("description", "")), ""]
            out += [*_table(schema["properties"][part], part), ""]
        out += ["### `kubectl get` columns", "", "| column | from | shown |", "| --- | --- | --- |"]
        out += [f"| {c['name'].upper()} | `{c['jsonPath']}` | {'`-o wide`' if c.get('priority') else 'always'} |"
                for c in version.get("additionalPrinterColumns", [])]
        out.append("")
    return "\n".join(out)
