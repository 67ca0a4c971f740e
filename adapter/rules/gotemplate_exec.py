"""Rendering for the Go-template subset: Go's printing, truth and builtin functions.

Values are Python `str`, `int`, `float`, `bool`, `None`, `list`/`tuple` (Go slices) and `dict`
(Go maps); a `Struct` is the template's root argument (unknown fields are errors, unlike maps).
`go_quote` (Go's `strconv.Quote`, what `printf "%q"` prints) is also how the rule compiler quotes
patterns in its messages and the PromQL renderer quotes label values.

Non-goals: parsing (`gotemplate`); the parse-tree nodes (`gotemplate_nodes`). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adapter.rules.gotemplate_nodes import (
    Action, Command, Control, Dot, FieldChain, FuncName, Literal, Pipeline, SubPipeline, Text,
    Variable,
)  # fmt: skip

__all__ = ["FUNCTIONS", "MISSING", "ExecError", "Struct", "go_print", "go_quote", "render", "truth"]


class ExecError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Missing:
    """Go's invalid reflect.Value: what field access on a map yields for a missing key."""

    def __str__(self) -> str:
        return "<no value>"


MISSING = _Missing()


@dataclass(frozen=True, slots=True)
class Struct:
    """A Go struct value: field access by name; an unknown field is an error."""

    type_name: str
    fields: Mapping[str, Any]


def go_print(value: Any) -> str:
    """fmt.Sprint of one value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    if isinstance(value, Struct):  # fmt.Sprint of a struct: its fields in declaration order
        return "{" + " ".join(go_print(item) for item in value.fields.values()) + "}"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{go_print(k)}:{go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e21 else str(int(value))
    return str(value)


def truth(value: Any) -> bool:
    if value is MISSING or value is None:
        return False
    if isinstance(value, (str, list, tuple, dict, Mapping)):
        return len(value) > 0
    return bool(value)


def go_quote(text: str) -> str:
    """strconv.Quote: double-quoted, Go escapes, non-printable runes escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not char.isprintable() and char != " ":
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _index(item: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(item, Mapping):
            item = item.get(key, "")  # Go returns the element type's zero value
        elif isinstance(item, (list, tuple, str)):
            if not isinstance(key, int) or not 0 <= key < len(item):
                raise ExecError(f"error calling index: index out of range: {key}")
            item = item[key]
        else:
            raise ExecError(f"error calling index: can't index item of type {type(item).__name__}")
    return item


def _printf(fmt: str, *args: Any) -> str:
    out, arg_iter, i = [], iter(args), 0
    while i < len(fmt):
        char = fmt[i]
        if char != "%" or i + 1 >= len(fmt):
            out.append(char)
            i += 1
            continue
        verb = fmt[i + 1]
        i += 2
        if verb == "%":
            out.append("%")
            continue
        arg = next(arg_iter, MISSING)
        if arg is MISSING:
            out.append(f"%!{verb}(MISSING)")
        elif verb in "sv":
            out.append(go_print(arg))
        elif verb == "d" and isinstance(arg, int):
            out.append(str(arg))
        elif verb == "q" and isinstance(arg, str):
            out.append(go_quote(arg))
        else:
            raise ExecError(f"printf verb %{verb} is not supported for {go_print(arg)!r}")
    return "".join(out)


def _compare(op: str) -> Callable[..., bool]:
    def compare(a: Any, *others: Any) -> bool:
        if not others:
            raise ExecError(f"missing argument for comparison {op}")
        for b in others:
            if type(a) is not type(b) and not (_num(a) and _num(b)):
                raise ExecError(f"incompatible types for comparison in {op}")
            if op == "eq" and a == b:
                return True
        if op == "eq":
            return False
        b = others[0]
        return bool({"ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op])

    return compare


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _and(*args: Any) -> Any:
    for arg in args:
        if not truth(arg):
            return arg
    return args[-1]


def _or(*args: Any) -> Any:
    for arg in args:
        if truth(arg):
            return arg
    return args[-1]


def _slice(item: Any, *bounds: int) -> Any:
    return item[slice(*bounds)] if len(bounds) <= 2 else item[bounds[0] : bounds[1]]


def _join(items: Any, sep: str) -> str:
    """Not a Go builtin; offered because rules commonly want `a,b,c` from a slice."""
    return sep.join(go_print(item) for item in items)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "and": _and, "or": _or, "not": lambda x: not truth(x), "len": lambda x: len(x),
    "index": _index, "print": lambda *a: _sprint(a), "printf": _printf,
    "println": lambda *a: " ".join(go_print(x) for x in a) + "\n",
    "eq": _compare("eq"), "ne": _compare("ne"), "lt": _compare("lt"), "le": _compare("le"),
    "gt": _compare("gt"), "ge": _compare("ge"), "slice": _slice, "join": _join,
}  # fmt: skip


def _sprint(args: tuple[Any, ...]) -> str:
    """fmt.Sprint: a space between operands when neither side is a string."""
    out = ""
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out += " "
        out += go_print(arg)
    return out


class _State:
    def __init__(self, root: Any) -> None:
        self.scopes: list[dict[str, Any]] = [{"$": root}]

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise ExecError(f"undefined variable: {name}")

    def assign(self, name: str, value: Any) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        raise ExecError(f"undefined variable: {name}")


def render(nodes: tuple[Any, ...], data: Any) -> str:
    root = data if isinstance(data, Struct) else Struct("data", data)
    out: list[str] = []
    _walk(nodes, root, _State(root), out)
    return "".join(out)


def _walk(nodes: tuple[Any, ...], dot: Any, state: _State, out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.text)
        elif isinstance(node, Action):
            value = _pipeline(node.pipeline, dot, state)
            if not node.pipeline.decl:
                out.append(go_print(value))
        elif isinstance(node, Control):
            _control(node, dot, state, out)


def _control(node: Control, dot: Any, state: _State, out: list[str]) -> None:
    state.scopes.append({})
    try:
        if node.kind == "range":
            _range(node, dot, state, out)
            return
        value = _pipeline(node.pipeline, dot, state)
        if truth(value):
            _walk(node.body, value if node.kind == "with" else dot, state, out)
        else:
            _walk(node.else_body, dot, state, out)
    finally:
        state.scopes.pop()


def _range(node: Control, dot: Any, state: _State, out: list[str]) -> None:
    pipe = node.pipeline
    value = _pipeline(Pipeline(decl=(), assign=False, commands=pipe.commands), dot, state)
    if isinstance(value, Mapping):
        items = [(key, value[key]) for key in sorted(value)]
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(value))
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [(i, i) for i in range(value)]
    elif value is None or value is MISSING:
        items = []
    else:
        raise ExecError(f"range can't iterate over {go_print(value)}")
    if not items:
        _walk(node.else_body, dot, state, out)
        return
    for key, item in items:
        if len(pipe.decl) == 1:
            state.scopes[-1][pipe.decl[0]] = item
        elif len(pipe.decl) == 2:
            state.scopes[-1][pipe.decl[0]] = key
            state.scopes[-1][pipe.decl[1]] = item
        _walk(node.body, item, state, out)


def _pipeline(pipe: Pipeline, dot: Any, state: _State) -> Any:
    value: Any = MISSING
    for i, command in enumerate(pipe.commands):
        value = _command(command, dot, state, value if i else MISSING)
    for name in pipe.decl:
        if pipe.assign:
            state.assign(name, value)
        else:
            state.scopes[-1][name] = value
    return value


def _command(command: Command, dot: Any, state: _State, piped: Any) -> Any:
    first = command.args[0]
    if isinstance(first, FuncName):
        args = [_arg(arg, dot, state) for arg in command.args[1:]]
        if piped is not MISSING:
            args.append(piped)
        try:
            return FUNCTIONS[first.name](*args)
        except ExecError:
            raise
        except (TypeError, ValueError, IndexError, KeyError) as err:
            raise ExecError(f"error calling {first.name}: {err}") from None
    if piped is not MISSING:
        raise ExecError(f"can't give argument to non-function {first}")
    return _arg(first, dot, state)


def _arg(arg: Any, dot: Any, state: _State) -> Any:
    if isinstance(arg, Literal):
        return arg.value
    if isinstance(arg, Dot):
        return dot
    if isinstance(arg, FieldChain):
        return _fields(dot, arg.chain)
    if isinstance(arg, Variable):
        return _fields(state.lookup(arg.name), arg.chain)
    if isinstance(arg, SubPipeline):
        return _pipeline(arg.pipeline, dot, state)
    raise ExecError(f"can't use {arg} as a value")


def _fields(value: Any, chain: tuple[str, ...]) -> Any:
    for name in chain:
        if isinstance(value, Struct):
            if name not in value.fields:
                raise ExecError(f"can't evaluate field {name} in type {value.type_name}")
            value = value.fields[name]
        elif isinstance(value, Mapping):
            value = value.get(name, MISSING)
        else:
            raise ExecError(f"can't evaluate field {name} in type {type(value).__name__}")
    return value
