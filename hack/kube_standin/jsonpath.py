"""The JSONPath subset CRD printer columns use, evaluated like kube-apiserver's table convertor.

Paths such as `.spec.scaleTargetRef.name`, `.status.conditions[0].type`, `.spec.items[*].name`,
`.status.conditions[?(@.type=="Ready")].status`, `.metadata.labels['app.kubernetes.io/name']`
and `.metadata.labels.app\\.kubernetes\\.io/name`. `find` returns every match in document order
(a missing key is no match, not an error). Non-goals: slices, recursive descent (`..`),
functions, filters other than `==`/`!=` against a literal or a bare `@.key` existence test.
Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

Step = tuple[str, Any]  # ("key", name) | ("index", n) | ("all", None) | ("filter", (key, op, value))
_FILTER = re.compile(r"^\?\(@\.([\w.-]+)\s*(?:(==|!=)\s*(.+?))?\s*\)$")


class JsonPathError(ValueError):
    """The path is outside the supported subset."""


def _bracket(inner: str) -> Step:
    inner = inner.strip()
    if inner == "*":
        return ("all", None)
    if inner.lstrip("-").isdigit():
        return ("index", int(inner))
    if inner[:1] in ("'", '"') and inner[-1:] == inner[:1]:
        return ("key", inner[1:-1])
    match = _FILTER.match(inner)
    if not match:
        raise JsonPathError(f"unsupported JSONPath element [{inner}]")
    key, op, literal = match.groups()
    value: Any = None
    if op:
        literal = literal.strip()
        value = literal[1:-1] if literal[:1] in ("'", '"') else json.loads(literal)
    return ("filter", (key, op, value))


def parse(path: str) -> list[Step]:
    """`.a.b[0]` (optionally wrapped in `{}`) as steps."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Step] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == ".":
            i += 1
            continue
        if char == "[":
            end = _closing(text, i)
            steps.append(_bracket(text[i + 1:end]))
            i = end + 1
            continue
        name = []
        while i < len(text) and text[i] not in ".[":
            if text[i] == "\\" and i + 1 < len(text):
                i += 1
            name.append(text[i])
            i += 1
        steps.append(("key", "".join(name)))
    return steps


def _closing(text: str, start: int) -> int:
    depth, quote = 0, ""
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in ("'", '"'):
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JsonPathError(f"unclosed [ in {text!r}")


def _matches(item: Any, key: str, op: str | None, value: Any) -> bool:
    node: Any = item
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    if op is None:
        return True
    return bool(node == value) if op == "==" else bool(node != value)


def _step(nodes: list[Any], step: Step) -> list[Any]:
    kind, arg = step
    out: list[Any] = []
    for node in nodes:
        if kind == "key" and isinstance(node, dict) and arg in node:
            out.append(node[arg])
        elif kind == "index" and isinstance(node, list) and -len(node) <= arg < len(node):
            out.append(node[arg])
        elif kind == "all" and isinstance(node, (list, dict)):
            out.extend(node if isinstance(node, list) else node.values())
        elif kind == "filter" and isinstance(node, list):
            out.extend(item for item in node if _matches(item, *arg))
    return out


def find(obj: Any, path: str) -> list[Any]:
    nodes = [obj]
    for step in parse(path):
        nodes = _step(nodes, step)
    return nodes
