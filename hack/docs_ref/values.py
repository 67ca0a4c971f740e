"""The chart's values table, read from the `# --` comments of values.yaml (helm-docs' convention).

A key preceded by a `# -- text` comment (continued by plain `#` lines) is one row: its dotted
path, its type from values.schema.json, its default (the whole value under it) and the text. A
key without one is descended into. The generator refuses, naming the path, a value no row covers,
a row the schema does not know, and a schema property values.yaml does not carry, so the page,
the values and the schema cannot disagree. Non-goal: a general YAML parser; values.yaml's keys
are plain block mappings, and lines inside lists and block scalars are skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-/]+):(?:\s|$)")
_DOC_START = re.compile(r"^\s*# -- ?(?P<text>.*)$")
_DOC_MORE = re.compile(r"^\s*#(?: (?P<text>.*))?$")
# Properties the schema must allow although values.yaml sets none: Helm passes them to every chart.
SCHEMA_ONLY = {"global": "Helm's values shared with subcharts; this chart reads none"}
MAX_DEFAULT = 100


@dataclass(frozen=True)
class Row:
    """One documented value."""

    path: str
    type: str
    default: str
    text: str


class ValuesDocError(ValueError):
    """values.yaml, its comments and values.schema.json disagree; each problem names a path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("values.yaml and values.schema.json disagree:\n  " + "\n  ".join(problems))
        self.problems = problems


def _lookup(values: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return False, None
        values = values[key]
    return True, values


def _commented_paths(text: str, values: dict[str, Any]) -> dict[tuple[str, ...], str]:
    """Each key path that has a `# --` comment, with its text, in file order."""
    documented: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        start, more, key = _DOC_START.match(line), _DOC_MORE.match(line), _KEY.match(line)
        if start:
            pending = [start.group("text").strip()]
        elif more and pending is not None:
            pending.append((more.group("text") or "").strip())
        elif key:
            indent = len(key.group("indent"))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = (*(k for _, k in stack), key.group("key"))
            found, parent = _lookup(values, path[:-1])
            if found and isinstance(parent, dict) and path[-1] in parent:
                stack.append((indent, path[-1]))
                if pending is not None:
                    documented[path] = " ".join(part for part in pending if part)
            pending = None
        elif line.strip():
            pending = None
    return documented


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        properties = schema.get("properties")
        if properties is None:
            return schema if "additionalProperties" in schema or schema.get("type") == "object" else None
        if key not in properties:
            return None
        schema = properties[key]
    return schema


def _schema_paths(schema: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    properties = schema.get("properties")
    if not properties:
        return [prefix]
    return [leaf for key, sub in properties.items() for leaf in _schema_paths(sub, (*prefix, key))]


def _value_leaves(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(values, dict) and values:
        return [leaf for key, sub in values.items() for leaf in _value_leaves(sub, (*prefix, key))]
    return [prefix]


def _type_of(schema: dict[str, Any], value: Any) -> str:
    declared = schema.get("type")
    if isinstance(declared, list):
        return " or ".join(declared)
    if isinstance(declared, str):
        return declared
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return {dict: "object", list: "array", bool: "boolean", int: "integer", float: "number",
            str: "string", type(None): "null"}[type(value)]


def _default(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= MAX_DEFAULT else text[:MAX_DEFAULT - 1] + "…"


def rows(values_text: str, schema: dict[str, Any]) -> list[Row]:
    """The table's rows in values.yaml order; ValuesDocError lists every disagreement at once."""
    values = yaml.load(values_text, Loader=yaml.CSafeLoader)
    documented = _commented_paths(values_text, values)
    problems = [f"{'.'.join(path)}: documented in values.yaml but not in values.schema.json"
                for path in documented if _schema_at(schema, path) is None]
    covered = set(documented)
    problems += [f"{'.'.join(leaf)}: set in values.yaml without a `# --` comment on it or a key above it"
                 for leaf in _value_leaves(values)
                 if not any(leaf[:n] in covered for n in range(1, len(leaf) + 1))]
    problems += [f"{'.'.join(leaf)}: in values.schema.json but not in values.yaml"
                 for leaf in _schema_paths(schema)
                 if leaf[0] not in SCHEMA_ONLY and not _lookup(values, leaf)[0]
                 and not any(_lookup(values, leaf[:n])[0] and leaf[:n] in covered for n in range(1, len(leaf)))]
    if problems:
        raise ValuesDocError(problems)
    return [Row(".".join(path), _type_of(_schema_at(schema, path) or {}, value), _default(value), text)
            for path, text in documented.items() for value in [_lookup(values, path)[1]]]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    return text.replace("|", "\\|")


def table(found: list[Row]) -> str:
    """The Markdown table of the rows."""
    lines = ["| value | type | default | meaning |", "| --- | --- | --- | --- |"]
    lines += [f"| `{row.path}` | {_cell(row.type)} | `{_code(row.default)}` | {_cell(row.text)} |" for row in found]
    return "\n".join(lines) + "\n"
