"""Label selectors with k8s.io/apimachinery semantics.

The HPA, kubectl and our own controller send selectors as strings in the canonical form that
`labels.Selector.String()` prints; the adapter must accept exactly what kube-apiserver accepts,
reject the rest with the same kind of message (a 400 for the client, never a 500), and match label
sets the same way. `metav1.LabelSelector` objects (matchLabels / matchExpressions) convert both ways.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "label_selector_from_selector",
    "parse_selector",
    "selector_from_label_selector",
    "validate_label_name",
    "validate_label_value",
]


class SelectorError(ValueError):
    """The selector text (or LabelSelector object) is not valid."""


class Operator(StrEnum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_SET_OPERATORS = frozenset({Operator.IN, Operator.NOT_IN})
_POSITIVE = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN})


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if op in _POSITIVE:
            return value is not None and value in self.values
        if op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            actual = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return actual > bound if op is Operator.GREATER_THAN else actual < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in _SET_OPERATORS:
            return f"{self.key} {op.value} ({','.join(self.values)})"
        if op is Operator.GREATER_THAN:
            return f"{self.key}>{self.values[0]}"
        if op is Operator.LESS_THAN:
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{op.value}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements, sorted by key as upstream keeps them."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def empty(cls) -> Selector:
        return cls(())

    def is_empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    def __iter__(self) -> Iterator[Requirement]:
        return iter(self.requirements)

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


# --- lexer -----------------------------------------------------------------------------------

_OPERATOR_TOKENS = ("==", "!=", "=", "!", ">", "<", "(", ")", ",")
_SPECIAL = set("=!(),><")
_WHITESPACE = set(" \t\r\n")
_END = ""


def _tokens(text: str) -> list[str]:
    """Split into operator tokens and identifiers; identifiers are any other run of bytes."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in _WHITESPACE:
            i += 1
        elif char in _SPECIAL:
            op = next(tok for tok in _OPERATOR_TOKENS if text.startswith(tok, i))
            tokens.append(op)
            i += len(op)
        else:
            start = i
            while i < len(text) and text[i] not in _SPECIAL and text[i] not in _WHITESPACE:
                i += 1
            tokens.append(text[start:i])
    return tokens


def _is_identifier(token: str) -> bool:
    return token != _END and token not in _OPERATOR_TOKENS


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else _END

    def take(self) -> str:
        token = self.peek()
        self.pos += 1
        return token

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        if self.peek() == _END:
            return Selector.empty()
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token == _END:
                break
            if token != ",":
                raise SelectorError(f"found '{token}', expected: ',' or 'end of string'")
            if not _is_identifier(self.peek()) and self.peek() != "!":
                raise SelectorError(f"found '{self.peek()}', expected: identifier after ','")
        requirements.sort(key=lambda req: req.key)
        return Selector(tuple(requirements))

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            key = self.key()
            if self.peek() not in (",", _END):
                raise SelectorError(f"found '{self.peek()}', expected: ',' or 'end of string'")
            return Requirement(key=key, operator=Operator.DOES_NOT_EXIST)
        key = self.key()
        if self.peek() in (",", _END):
            return Requirement(key=key, operator=Operator.EXISTS)
        operator = self.operator()
        if operator in _SET_OPERATORS:
            values = self.value_set()
        elif operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
            values = (self.integer_value(),)
        else:
            values = (self.single_value(),)
        for value in values:
            _check_value(value)
        return Requirement(key=key, operator=operator, values=values)

    def key(self) -> str:
        token = self.take()
        if not _is_identifier(token):
            raise SelectorError(f"found '{token}', expected: identifier")
        _check_key(token)
        return token

    def operator(self) -> Operator:
        token = self.take()
        mapping = {"=": Operator.EQUALS, "==": Operator.DOUBLE_EQUALS, "!=": Operator.NOT_EQUALS,
                   ">": Operator.GREATER_THAN, "<": Operator.LESS_THAN, "in": Operator.IN,
                   "notin": Operator.NOT_IN}
        if token not in mapping:
            raise SelectorError(f"found '{token}', expected: in, notin, =, ==, !=, gt, lt")
        return mapping[token]

    def single_value(self) -> str:
        return self.take() if _is_identifier(self.peek()) else ""

    def integer_value(self) -> str:
        token = self.take()
        if not _is_identifier(token) or re.fullmatch(r"[+-]?\d+", token) is None:
            raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer")
        if not -(2**63) <= int(token) < 2**63:
            raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer")
        return token

    def value_set(self) -> tuple[str, ...]:
        token = self.take()
        if token != "(":
            raise SelectorError(f"found '{token}' expected: '('")
        values: set[str] = set()
        expect_value = True
        while True:
            token = self.peek()
            if token == ")":
                self.take()
                if expect_value:
                    values.add("")
                return tuple(sorted(values))
            if token == ",":
                self.take()
                if expect_value:
                    values.add("")
                expect_value = True
            elif _is_identifier(token) and expect_value:
                values.add(self.take())
                expect_value = False
            else:
                raise SelectorError(f"found '{token}', expected: ',' or ')'")


def parse_selector(text: str) -> Selector:
    """Parse a label selector string exactly as `labels.Parse` does."""
    return _Parser(text).parse()


# --- validation ------------------------------------------------------------------------------

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _check_key(key: str) -> None:
    try:
        validate_label_name(key)
    except SelectorError as err:
        raise SelectorError(f"unable to parse requirement: key: Invalid value: {key!r}: {err}") from None


def _check_value(value: str) -> None:
    try:
        validate_label_value(value)
    except SelectorError as err:
        raise SelectorError(f"unable to parse requirement: values[0]: Invalid value: {value!r}: {err}") from None


def validate_label_name(key: str) -> None:
    """A qualified label key: optional DNS-subdomain prefix and '/', then a ≤63-char name."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if "/" in prefix:
            raise SelectorError("a qualified name must consist of at most one '/'")
        if not prefix or len(prefix) > 253 or _DNS_SUBDOMAIN.fullmatch(prefix) is None:
            raise SelectorError("prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        raise SelectorError("name part must be non-empty")
    if len(name) > 63:
        raise SelectorError("name part must be no more than 63 characters")
    if _NAME.fullmatch(name) is None:
        raise SelectorError(_NAME_MESSAGE)


def validate_label_value(value: str) -> None:
    """A label value: empty, or ≤63 characters of the name alphabet."""
    if value == "":
        return
    if len(value) > 63:
        raise SelectorError("must be no more than 63 characters")
    if _NAME.fullmatch(value) is None:
        raise SelectorError(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )


# --- metav1.LabelSelector ----------------------------------------------------------------------

_EXPRESSION_OPERATORS = {"In": Operator.IN, "NotIn": Operator.NOT_IN, "Exists": Operator.EXISTS,
                         "DoesNotExist": Operator.DOES_NOT_EXIST}


def selector_from_label_selector(obj: Mapping[str, Any] | None) -> Selector:
    """`metav1.LabelSelectorAsSelector`: None or {} selects everything."""
    if not obj:
        return Selector.empty()
    requirements: list[Requirement] = []
    for key, value in sorted((obj.get("matchLabels") or {}).items()):
        validate_label_name(key)
        validate_label_value(value)
        requirements.append(Requirement(key=key, operator=Operator.EQUALS, values=(value,)))
    for expr in obj.get("matchExpressions") or []:
        key, op_name = expr.get("key", ""), expr.get("operator", "")
        validate_label_name(key)
        if op_name not in _EXPRESSION_OPERATORS:
            raise SelectorError(f"{op_name!r} is not a valid label selector operator")
        operator = _EXPRESSION_OPERATORS[op_name]
        values = tuple(sorted(set(expr.get("values") or [])))
        if operator in _SET_OPERATORS and not values:
            raise SelectorError(f"for '{op_name}' operator, values set can't be empty")
        if operator not in _SET_OPERATORS and values:
            raise SelectorError("values set must be empty for exists and does not exist")
        for value in values:
            validate_label_value(value)
        requirements.append(Requirement(key=key, operator=operator, values=values))
    requirements.sort(key=lambda req: req.key)
    return Selector(tuple(requirements))


def label_selector_from_selector(selector: Selector) -> dict[str, Any] | None:
    """The `metav1.LabelSelector` for a selector; `!=` becomes NotIn, gt/lt cannot be expressed."""
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for req in selector.requirements:
        op = req.operator
        if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS) and req.key not in match_labels:
            match_labels[req.key] = req.values[0]
        elif op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
            expressions.append({"key": req.key, "operator": "In", "values": list(req.values)})
        elif op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            expressions.append({"key": req.key, "operator": "NotIn", "values": list(req.values)})
        elif op is Operator.EXISTS:
            expressions.append({"key": req.key, "operator": "Exists"})
        elif op is Operator.DOES_NOT_EXIST:
            expressions.append({"key": req.key, "operator": "DoesNotExist"})
        else:
            return None
    result: dict[str, Any] = {}
    if match_labels:
        result["matchLabels"] = match_labels
    if expressions:
        result["matchExpressions"] = expressions
    return result
