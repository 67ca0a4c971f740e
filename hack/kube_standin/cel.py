"""A small CEL evaluator for CRD validation rules (`x-kubernetes-validations`).

Covers what CRD rules are usually written with: `self` (the value the rule sits on), field
selection, indexing, `has(self.f)`, literals (int, double, string, bool, null, lists),
`! - * / % + < <= > >= == != in && || ?:`, `size()`, `startsWith`, `endsWith`, `contains`,
`matches`, `all`, `exists`, `exists_one`, `map`, `filter`, `int()`, `string()`, `double()`.
Errors (a missing key, a type mismatch) raise `CelError`. Non-goals: transition rules
(`oldSelf`; the caller skips them), type checking before evaluation, cost limits, maps
literals, timestamps and durations, optional types, string formatting. Pure.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

Node = tuple[Any, ...]
_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d+(?:[eE][-+]?\d+)?|\d+u?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[!<>+\-*/%?:.()\[\],])
)""", re.VERBOSE)
_MACROS = ("all", "exists", "exists_one", "map", "filter")


class CelError(ValueError):
    """The rule could not be parsed or evaluated."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match:
            raise CelError(f"unexpected character at {pos}: {text[pos:pos + 10]!r}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise CelError("unexpected end of expression")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise CelError(f"expected {expected!r}, found {token[1]!r}")
        self.pos += 1
        return token

    def expr(self) -> Node:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            yes = self.expr()
            self.take(":")
            return ("?", cond, yes, self.expr())
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=",
                                                              "in"), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            left = (op, left, self.binary(level + 1))
        return left

    def unary(self) -> Node:
        if self.peek() in ("!", "-"):
            op = self.take()[1]
            return ("neg" if op == "-" else "!", self.unary())
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                index = self.expr()
                self.take("]")
                node = ("index", node, index)
                continue
            name = self.take()[1]
            if self.peek() == "(":
                node = ("call", name, node, self.args())
            else:
                node = ("select", node, name)
        return node

    def args(self) -> list[Node]:
        self.take("(")
        out: list[Node] = []
        while self.peek() != ")":
            out.append(self.expr())
            if self.peek() == ",":
                self.take(",")
        self.take(")")
        return out

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return ("lit", float(text) if "." in text else int(text.rstrip("u")))
        if kind == "str":
            return ("lit", bytes(text[1:-1], "utf-8").decode("unicode_escape"))
        if text == "(":
            node = self.expr()
            self.take(")")
            return node
        if text == "[":
            items: list[Node] = []
            while self.peek() != "]":
                items.append(self.expr())
                if self.peek() == ",":
                    self.take(",")
            self.take("]")
            return ("list", items)
        if kind == "id":
            literals = {"true": True, "false": False, "null": None}
            if text in literals:
                return ("lit", literals[text])
            if self.peek() == "(":
                return ("call", text, None, self.args())
            return ("var", text)
        raise CelError(f"unexpected token {text!r}")


@functools.lru_cache(maxsize=512)
def parse(text: str) -> Node:
    """The rule's syntax tree (cached: the same CRD rules are evaluated on every write)."""
    parser = _Parser(text)
    node = parser.expr()
    if parser.pos != len(parser.tokens):
        raise CelError(f"unexpected token {parser.peek()!r}")
    return node


def evaluate(rule: str, self_value: Any) -> Any:
    return _eval(parse(rule), {"self": self_value})


def _eval(node: Node, env: dict[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "var":
        if node[1] not in env:
            raise CelError(f"undeclared reference to '{node[1]}'")
        return env[node[1]]
    if kind == "list":
        return [_eval(n, env) for n in node[1]]
    if kind == "select":
        target = _eval(node[1], env)
        if not isinstance(target, dict) or node[2] not in target:
            raise CelError(f"no such key: {node[2]}")
        return target[node[2]]
    if kind == "index":
        return _index(_eval(node[1], env), _eval(node[2], env))
    if kind == "call":
        return _call(node, env)
    if kind == "?":
        return _eval(node[2] if _bool(_eval(node[1], env)) else node[3], env)
    if kind in ("&&", "||"):
        return _logic(kind, node, env)
    if kind == "!":
        return not _bool(_eval(node[1], env))
    if kind == "neg":
        return -_eval(node[1], env)
    return _binary(kind, _eval(node[1], env), _eval(node[2], env))


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise CelError(f"no matching overload: expected bool, got {type(value).__name__}")
    return value


def _logic(op: str, node: Node, env: dict[str, Any]) -> bool:
    """CEL's commutative && and ||: an error on one side is absorbed by a decisive other side."""
    results: list[bool | CelError] = []
    for side in node[1:]:
        try:
            results.append(_bool(_eval(side, env)))
        except CelError as e:
            results.append(e)
    decisive = op == "||"
    if decisive in results:
        return decisive
    for result in results:
        if isinstance(result, CelError):
            raise result
    return not decisive


def _index(target: Any, key: Any) -> Any:
    try:
        return target[key]
    except (KeyError, IndexError, TypeError):
        raise CelError(f"no such key: {key}") from None


def _binary(op: str, left: Any, right: Any) -> Any:
    try:
        if op == "in":
            return left in right
        if op == "/" and isinstance(left, int) and isinstance(right, int):
            if right == 0:
                raise CelError("division by zero")
            return int(left / right)
        if op == "%" and isinstance(left, int) and isinstance(right, int):
            if right == 0:
                raise CelError("modulus by zero")
            return left - right * int(left / right)
        ops: dict[str, Callable[[Any, Any], Any]] = {
            "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
            "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "/": lambda a, b: a / b}
        return ops[op](left, right)
    except (TypeError, ZeroDivisionError):
        raise CelError(f"no such overload: {type(left).__name__} {op} "
                       f"{type(right).__name__}") from None


def _call(node: Node, env: dict[str, Any]) -> Any:
    _, name, target, args = node
    if name == "has" and target is None:
        if len(args) != 1 or args[0][0] != "select":
            raise CelError("invalid argument to has() macro")
        holder = _eval(args[0][1], env)
        return isinstance(holder, dict) and args[0][2] in holder
    if name in _MACROS and target is not None:
        return _macro(name, _eval(target, env), args, env)
    values = [_eval(a, env) for a in args]
    if target is not None:
        values.insert(0, _eval(target, env))
    return _function(name, values)


def _macro(name: str, items: Any, args: list[Node], env: dict[str, Any]) -> Any:
    if len(args) != 2 or args[0][0] != "var":
        raise CelError(f"invalid arguments to {name}()")
    variable, body = args[0][1], args[1]
    members = list(items) if isinstance(items, (list, dict)) else None
    if members is None:
        raise CelError(f"{name}() needs a list or map")

    def run(item: Any) -> Any:
        return _eval(body, {**env, variable: item})
    if name == "map":
        return [run(item) for item in members]
    if name == "filter":
        return [item for item in members if _bool(run(item))]
    results = [_bool(run(item)) for item in members]
    if name == "all":
        return all(results)
    if name == "exists":
        return any(results)
    return sum(results) == 1


def _function(name: str, values: list[Any]) -> Any:
    functions: dict[str, Callable[..., Any]] = {
        "size": len, "startsWith": str.startswith, "endsWith": str.endswith,
        "contains": lambda s, x: x in s, "matches": lambda s, p: re.search(p, s) is not None,
        "int": int, "double": float, "string": lambda v: str(v).lower() if isinstance(v, bool)
        else str(v), "lowerAscii": str.lower, "upperAscii": str.upper, "trim": str.strip,
    }
    if name not in functions:
        raise CelError(f"undeclared reference to '{name}'")
    try:
        return functions[name](*values)
    except (TypeError, ValueError, re.error):
        raise CelError(f"no matching overload for '{name}'") from None
