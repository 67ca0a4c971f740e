"""Field selectors (`fields.ParseSelector`): `metadata.name=web-0,status.phase!=Failed`.

Kept apart from label selectors because the grammar is different (no sets, backslash escapes) and
only equality is supported. Errors are the same `SelectorError` as label selectors raise.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubecommon.selectors import Operator, SelectorError

__all__ = ["FieldRequirement", "FieldSelector", "parse_field_selector"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRequirement:
    field: str
    operator: Operator
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        actual = fields.get(self.field, "")
        return actual == self.value if self.operator is not Operator.NOT_EQUALS else actual != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator.value}{self.value}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(req.matches(fields) for req in self.requirements)

    def value_for(self, field: str) -> str | None:
        """The value an equality requirement pins `field` to, if any (e.g. metadata.name)."""
        for req in self.requirements:
            if req.field == field and req.operator is not Operator.NOT_EQUALS:
                return req.value
        return None

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


_FIELD_TERM = re.compile(r"(?P<field>[^=!,\s]+)\s*(?P<op>==|=|!=)(?P<value>.*)", re.DOTALL)


def parse_field_selector(text: str) -> FieldSelector:
    """`fields.ParseSelector`: comma-separated `field=value`, `field==value`, `field!=value`.

    Backslash escapes `\\,`, `\\=` and `\\\\` are honoured in values as upstream does.
    """
    if not text.strip():
        return FieldSelector()
    requirements = []
    for term in _split_unescaped(text):
        match = _FIELD_TERM.fullmatch(term.strip())
        if match is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        op = {"=": Operator.EQUALS, "==": Operator.DOUBLE_EQUALS, "!=": Operator.NOT_EQUALS}[match["op"]]
        value = re.sub(r"\\(.)", r"\1", match["value"])
        requirements.append(FieldRequirement(field=match["field"], operator=op, value=value))
    return FieldSelector(tuple(requirements))


def _split_unescaped(text: str) -> list[str]:
    parts, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    parts.append("".join(current))
    return parts
