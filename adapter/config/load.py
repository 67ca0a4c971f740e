"""Strict loading of the rule file (prometheus-adapter's `yaml.UnmarshalStrict` semantics).

Job: turn YAML text into `AdapterConfig`, rejecting what prometheus-adapter rejects at start — an
unknown key, a duplicate key, a value of the wrong shape, an invalid `window` — and collecting
every such problem (file, rule, field path, line, reason) into one `ConfigError`. Like yaml.v2, a
scalar given for a string field is taken as written (`seriesQuery: 123` is "123") and `null`
leaves the zero value. Non-goals: regex/template/resource validation (`adapter.rules.compile`
does those, with the same error type). `load_config` is the only function here that reads a file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from adapter.config.errors import PARSE_STAGE, READ_STAGE, ConfigError, Problem
from adapter.config.model import (
    AdapterConfig,
    DiscoveryRule,
    GroupResourceRef,
    LabelOverride,
    NameMapping,
    RegexFilter,
    ResourceMapping,
    ResourceRule,
    ResourceRules,
)

__all__ = ["PARSE_STAGE", "load_config", "parse_config", "parse_duration", "split_path"]

#: prometheus-adapter's prefix for a file that does not read as a rule file (YAML syntax, an
#: unknown key, a value of the wrong shape): `unable to parse metrics discovery config: ...`

_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_STR, _BOOL, _DURATION = "string", "bool", "duration"


@dataclass(frozen=True, slots=True)
class _ListOf:
    item: str


@dataclass(frozen=True, slots=True)
class _MapOf:
    item: str


# YAML key -> (dataclass field, kind). Kinds name a scalar type, a list/map of a struct, or a struct.
_Kind = str | _ListOf | _MapOf
_SCHEMA: dict[str, dict[str, tuple[str, _Kind]]] = {
    "config": {
        "rules": ("rules", _ListOf("rule")),
        "externalRules": ("external_rules", _ListOf("rule")),
        "resourceRules": ("resource_rules", "resourceRules"),
    },
    "rule": {
        "seriesQuery": ("series_query", _STR),
        "seriesFilters": ("series_filters", _ListOf("filter")),
        "resources": ("resources", "resources"),
        "name": ("name", "name"),
        "metricsQuery": ("metrics_query", _STR),
    },
    "filter": {"is": ("is_", _STR), "isNot": ("is_not", _STR)},
    "resources": {
        "template": ("template", _STR),
        "overrides": ("overrides", _MapOf("groupResource")),
        "namespaced": ("namespaced", _BOOL),
    },
    "groupResource": {"group": ("group", _STR), "resource": ("resource", _STR)},
    "name": {"matches": ("matches", _STR), "as": ("as_", _STR)},
    "resourceRules": {
        "cpu": ("cpu", "resourceRule"),
        "memory": ("memory", "resourceRule"),
        "window": ("window", _DURATION),
    },
    "resourceRule": {
        "containerQuery": ("container_query", _STR),
        "nodeQuery": ("node_query", _STR),
        "resources": ("resources", "resources"),
        "containerLabel": ("container_label", _STR),
    },
}
_GO_TYPE = {  # named like upstream's Go types so messages match what users search for
    "config": "MetricsDiscoveryConfig",
    "rule": "DiscoveryRule",
    "filter": "RegexFilter",
    "resources": "ResourceMapping",
    "groupResource": "GroupResource",
    "name": "NameMapping",
    "resourceRules": "ResourceRules",
    "resourceRule": "ResourceRule",
}


def load_config(path: str | Path) -> AdapterConfig:
    """Read and parse one rule file; the only I/O in `adapter.config`."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError([Problem(source=source, reason=f"cannot read file: {err}")], stage=READ_STAGE) from err
    return parse_config(text, source=source)


def parse_config(text: str, *, source: str = "<string>") -> AdapterConfig:
    """Parse rule-file text; raise `ConfigError` listing every shape problem."""
    walker = _Walker(source)
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ConfigError([_yaml_problem(source, err, text)], stage=PARSE_STAGE) from err
    values: dict[str, Any] = {}
    if node is not None and node.tag != _NULL_TAG:
        values = walker.struct(node, "config", [], loader)
    if walker.problems:
        raise ConfigError(walker.problems, stage=PARSE_STAGE)
    return AdapterConfig(
        rules=tuple(values.get("rules", ())),
        external_rules=tuple(values.get("external_rules", ())),
        resource_rules=values.get("resource_rules"),
        source=source,
        lines=MappingProxyType(dict(walker.lines)),
    )


def _yaml_problem(source: str, err: yaml.YAMLError, text: str) -> Problem:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if mark is None:
        return Problem(source=source, reason=reason)
    reason += f" at column {mark.column + 1}"
    lines = text.splitlines()
    offending = lines[mark.line] if mark.line < len(lines) else ""
    if re.search(r':\s*"', offending) and offending.count('"') - offending.count('\\"') > 2:
        reason += ('; the double-quoted value contains an unescaped " (prometheus-adapter issue '
                   "#697): quote the value with single quotes or write \\\"")
    location, path = _guess_location(lines, mark.line)
    return Problem(source=source, location=location, field=path, reason=reason, line=mark.line + 1)


def _guess_location(lines: list[str], index: int) -> tuple[str, str]:
    """Best-effort rule and key for a line of text that did not parse as YAML."""
    top, item, item_indent = "", -1, None
    for line in lines[: index + 1]:
        if re.match(r"^[A-Za-z_]\w*\s*:", line):
            top, item, item_indent = line.split(":", 1)[0].strip(), -1, None
            continue
        match = re.match(r"^(\s*)-(\s|$)", line)
        if match and top in ("rules", "externalRules") and (item_indent in (None, len(match.group(1)))):
            item_indent, item = len(match.group(1)), item + 1
    key = re.match(r"^\s*(?:-\s+)?([A-Za-z_]\w*)\s*:", lines[index]) if index < len(lines) else None
    field_name = key.group(1) if key else ""
    if top in ("rules", "externalRules") and item >= 0:
        return f"{top}[{item}]", field_name
    return top, (field_name if field_name != top else "")


def split_path(parts: list[str]) -> tuple[str, str]:
    """Split a field path into (rule location, field path): `rules[3]` + `name.matches`."""
    text = _join(parts)
    match = re.match(r"^((?:rules|externalRules)\[\d+\]|resourceRules\.(?:cpu|memory))\.?", text)
    if match:
        return match.group(1), text[match.end() :]
    if text.startswith("resourceRules."):
        return "resourceRules", text[len("resourceRules.") :]
    return "", text


def _join(parts: list[str]) -> str:
    out = ""
    for part in parts:
        out += part if part.startswith("[") or not out else "." + part
    return out


@dataclass(slots=True)
class _Walker:
    source: str
    problems: list[Problem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)

    def problem(self, parts: list[str], node: yaml.Node, reason: str) -> None:
        location, path = split_path(parts)
        line = node.start_mark.line + 1
        self.problems.append(
            Problem(source=self.source, location=location, field=path, reason=reason, line=line)
        )

    def struct(self, node: yaml.Node, kind: str, parts: list[str], loader: Any) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            self.problem(parts, node, f"expected a mapping ({_GO_TYPE[kind]}), got {_shape(node)} "
                         f"({_go_unmarshal(node, 'config.' + _GO_TYPE[kind])})")
            return {}
        loader.flatten_mapping(node)  # YAML merge keys (`<<: *anchor`), as yaml.v2 supports
        schema = _SCHEMA[kind]
        out: dict[str, Any] = {}
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            child = [*parts, key]
            if key in seen:
                self.problem(child, key_node, f"duplicate key {key!r}: key {_q(key)} already set in map")
                continue
            seen.add(key)
            if key not in schema:
                self.problem(child, key_node, _unknown_key(key, kind))
                continue
            attr, child_kind = schema[key]
            self.lines[_join(child)] = key_node.start_mark.line + 1
            value = self.value(value_node, child_kind, child, loader)
            if value is not None:
                out[attr] = value
        return out

    def value(self, node: yaml.Node, kind: _Kind, parts: list[str], loader: Any) -> Any:
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG:
            return None  # yaml.v2 leaves the zero value for null
        if isinstance(kind, _ListOf):
            return self.list_of(node, kind.item, parts, loader)
        if isinstance(kind, _MapOf):
            return self.overrides(node, kind.item, parts, loader)
        if kind in (_STR, _BOOL, _DURATION):
            return self.scalar(node, kind, parts)
        return _BUILDERS[kind](self.struct(node, kind, parts, loader))

    def list_of(self, node: yaml.Node, item: str, parts: list[str], loader: Any) -> tuple[Any, ...]:
        if not isinstance(node, yaml.SequenceNode):
            self.problem(parts, node, f"expected a list of {_GO_TYPE[item]}, got {_shape(node)} "
                         f"({_go_unmarshal(node, '[]config.' + _GO_TYPE[item])})")
            return ()
        items = []
        for index, child in enumerate(node.value):
            child_parts = [*parts[:-1], f"{parts[-1]}[{index}]"]
            self.lines[_join(child_parts)] = child.start_mark.line + 1
            items.append(_BUILDERS[item](self.struct(child, item, child_parts, loader)))
        return tuple(items)

    def overrides(self, node: yaml.Node, item: str, parts: list[str], loader: Any) -> Any:
        if not isinstance(node, yaml.MappingNode):
            self.problem(parts, node, f"expected a mapping of label to group-resource, got {_shape(node)} "
                         f"({_go_unmarshal(node, 'map[string]config.GroupResource')})")
            return ()
        out, seen = [], set()
        for key_node, value_node in node.value:
            label = str(key_node.value)
            child = [*parts, label]
            if label in seen:
                self.problem(child, key_node, f"duplicate key {label!r}: key {_q(label)} already set in map")
                continue
            seen.add(label)
            self.lines[_join(child)] = key_node.start_mark.line + 1
            target = self.struct(value_node, item, child, loader) if value_node.tag != _NULL_TAG else {}
            out.append(LabelOverride(label=label, target=GroupResourceRef(**target)))
        return tuple(out)

    def scalar(self, node: yaml.Node, kind: str, parts: list[str]) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.problem(parts, node, f"expected a {kind}, got {_shape(node)} ({_go_unmarshal(node, kind)})")
            return None
        if kind == _BOOL:
            if node.tag != _BOOL_TAG:
                self.problem(parts, node, f"expected true or false, got {node.value!r} "
                             f"({_go_unmarshal(node, 'bool')})")
                return None
            return node.value.lower() in ("true", "yes", "on")
        if kind == _DURATION:
            try:
                return (node.value, parse_duration(node.value))
            except ValueError as err:
                self.problem(parts, node, str(err))
                return None
        return node.value


def _shape(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the scalar {node.value!r}"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_unmarshal(node: yaml.Node, target: str) -> str:
    """yaml.v2's wording for a shape mismatch, which users find in upstream's logs and issues."""
    if isinstance(node, yaml.MappingNode):
        return f"cannot unmarshal !!map into {target}"
    if isinstance(node, yaml.SequenceNode):
        return f"cannot unmarshal !!seq into {target}"
    tag = node.tag.rsplit(":", 1)[-1]
    return f"cannot unmarshal !!{tag} `{node.value}` into {target}"


def _unknown_key(key: str, kind: str) -> str:
    known = list(_SCHEMA[kind])
    reason = (f"unknown field {key!r}: field {key} not found in type config.{_GO_TYPE[kind]} "
              f"(known fields: {', '.join(known)})")
    close = [k for k in known if k.lower() == key.lower()] or difflib.get_close_matches(key, known, 1)
    if close:
        return reason + f"; did you mean {close[0]!r}?"
    for parent_kind in _SCHEMA:
        if key in _SCHEMA[parent_kind] and parent_kind != kind:
            return reason + f"; {key!r} is a field of {_GO_TYPE[parent_kind]} — check its indentation"
    return reason


_DURATION_RE = re.compile(
    r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$"
)
_DURATION_UNITS = (365 * 86400.0, 7 * 86400.0, 86400.0, 3600.0, 60.0, 1.0, 0.001)


def parse_duration(text: str) -> float:
    """Prometheus `model.ParseDuration` (`5m`, `1h30m`, `0`): seconds, or ValueError."""
    if text == "0":
        return 0.0
    if text == "":
        raise ValueError("empty duration string")
    match = _DURATION_RE.match(text)
    if match is None:
        raise ValueError(f"not a valid duration string: {text!r} (use e.g. 30s, 5m, 1h)")
    return sum(float(n) * unit for n, unit in zip(match.groups(), _DURATION_UNITS, strict=True) if n)


def _window(values: dict[str, Any]) -> dict[str, Any]:
    window = values.pop("window", None)
    if window is not None:
        values["window"], values["window_seconds"] = window
    return values



_BUILDERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "rule": lambda v: DiscoveryRule(**v),
    "filter": lambda v: RegexFilter(**v),
    "resources": lambda v: ResourceMapping(**v),
    "name": lambda v: NameMapping(**v),
    "resourceRules": lambda v: ResourceRules(**_window(v)),
    "resourceRule": lambda v: ResourceRule(**v),
}
