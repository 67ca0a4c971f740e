"""A small Go `text/template` engine with prometheus-adapter's `<<` `>>` delimiters.

Job: parse a template once (at rule-compile time, so a bad template fails at start) and render it
with plain Python values exactly as Go prints them: strings as-is, slices as `[a b]`, maps as
`map[k:v]` (sorted keys), a missing map entry read by field access as `<no value>` and by `index`
as "". Supported: text, `<<- ->>` trimming, comments, field chains (`.A.B`), `.`, variables
(`$`, `$x`, `:=`, `=`), pipelines with `|`, parenthesised pipelines, string/number/bool/nil
literals, `if`/`else if`/`else`/`end`, `range` (with `$i, $v :=`, `else`), `with`, and the
functions `and or not len index print printf println eq ne lt le gt ge slice join`.
Non-goals: `define`/`template`/`block`, methods, `break`/`continue`; they are rejected with a clear
error at parse time. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapter.rules import gotemplate_exec as _exec
from adapter.rules.gotemplate_nodes import (
    Action, Command, Control, Dot, FieldChain, Literal, Node, Pipeline, Text, Variable, FuncName,
    SubPipeline,
)  # fmt: skip

__all__ = ["Template", "TemplateError", "TemplateExecError", "TemplateSyntaxError", "parse"]


class TemplateError(ValueError):
    """Base of template problems."""


class TemplateSyntaxError(TemplateError):
    """The template text cannot be parsed."""


class TemplateExecError(TemplateError):
    """Rendering failed (e.g. a field that does not exist on the value)."""


_FUNCS = frozenset(_exec.FUNCTIONS)
_KEYWORDS = frozenset({"if", "else", "end", "range", "with", "define", "template", "block",
                       "break", "continue", "nil", "true", "false"})  # fmt: skip
_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<raw>`[^`]*`)
    |(?P<declare>:=)
    |(?P<op>[|(),=])
    |(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    |(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    |(?P<number>[+-]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+))
    |(?P<dot>\.)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template; `render(data)` is pure and thread-safe."""

    source: str
    nodes: tuple[Node, ...]
    root_fields: tuple[str, ...] = field(default=())
    #: the root is handed on whole somewhere (`<<.>>`, `<<with .>>`, `$r := .`, `$`), so any field
    #: may be read through it
    reads_whole_root: bool = False

    def render(self, data: Mapping[str, Any]) -> str:
        try:
            return _exec.render(self.nodes, data)
        except _exec.ExecError as err:
            raise TemplateExecError(str(err)) from None

    def references(self, name: str) -> bool:
        """True if the template may read root field `name` anywhere (e.g. `LabelValuesByName`)."""
        return self.reads_whole_root or name in self.root_fields

    def index_keys(self, name: str) -> tuple[str, ...]:
        """Literal keys read from root map field `name`: `index .name "k"` and `.name.k`."""
        keys: list[str] = []
        _collect_keys(self.nodes, name, keys)
        return tuple(dict.fromkeys(keys))

    @property
    def is_constant(self) -> bool:
        return all(isinstance(node, Text) for node in self.nodes)


def parse(source: str, *, fields: Mapping[str, str] | None = None) -> Template:
    """Parse `source`. When `fields` ({name: "string"|"map"|"list"}) is given, field access on
    the root value is checked statically, so `<<.Foo>>` fails here instead of at every query."""
    parser = _Parser(source)
    nodes = parser.parse_list(top=True)
    used: set[str] = set()
    _check_fields(nodes, fields, used, dot_is_root=True)
    whole = _WHOLE_ROOT in used
    used.discard(_WHOLE_ROOT)
    return Template(source=source, nodes=tuple(nodes), root_fields=tuple(sorted(used)), reads_whole_root=whole)


# --- lexing ---------------------------------------------------------------------------------


def _split(source: str) -> list[tuple[str, str, int]]:
    """Split into ("text", text, pos) and ("action", inner, pos), applying trim markers."""
    parts: list[tuple[str, str, int]] = []
    pos = 0
    while True:
        start = source.find("<<", pos)
        if start < 0:
            parts.append(("text", source[pos:], pos))
            return parts
        text = source[pos:start]
        inner_start = start + 2
        if source.startswith("-", inner_start) and source[inner_start + 1 : inner_start + 2].isspace():
            text = text.rstrip()
            inner_start += 1
        parts.append(("text", text, pos))
        end = _find_close(source, inner_start)
        inner, pos = source[inner_start:end], end + 2
        if inner.endswith("-") and inner[-2:-1].isspace():
            inner = inner[:-1]
            stripped = source[pos:].lstrip()
            pos = len(source) - len(stripped)
        parts.append(("action", inner, start))


def _find_close(source: str, pos: int) -> int:
    quote = ""
    while pos < len(source):
        char = source[pos]
        if quote:
            if char == "\\" and quote == '"':
                pos += 1
            elif char == quote:
                quote = ""
        elif char in "\"`":
            quote = char
        elif source.startswith(">>", pos):
            return pos
        elif source.startswith("/*", pos):
            close = source.find("*/", pos + 2)
            pos = close + 1 if close >= 0 else len(source)
        pos += 1
    raise TemplateSyntaxError(f"unclosed action starting near {_line_of(source, pos)}")


def _line_of(source: str, pos: int) -> str:
    return f"line {source.count(chr(10), 0, pos) + 1}"


def _tokens(inner: str, where: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        match = _TOKEN.match(inner, pos)
        if match is None:
            raise TemplateSyntaxError(f"{where}: unexpected {inner[pos]!r} in action <<{inner}>>")
        kind = match.lastgroup or ""
        if kind != "ws":
            out.append((kind, match.group()))
        pos = match.end()
    return out


# --- parsing --------------------------------------------------------------------------------


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.parts = _split(source)
        self.index = 0

    def parse_list(self, *, top: bool = False) -> list[Node]:
        """Nodes until `else`/`end` (left unconsumed) or the end of input."""
        nodes: list[Node] = []
        while self.index < len(self.parts):
            kind, text, pos = self.parts[self.index]
            if kind == "text":
                self.index += 1
                if text:
                    nodes.append(Text(text))
                continue
            stripped = text.strip()
            if stripped.startswith("/*"):
                if not stripped.endswith("*/"):
                    raise TemplateSyntaxError(f"{_line_of(self.source, pos)}: unclosed comment")
                self.index += 1
                continue
            tokens = _tokens(text, _line_of(self.source, pos))
            if not tokens:
                raise TemplateSyntaxError(f"{_line_of(self.source, pos)}: missing value for command")
            head = tokens[0][1] if tokens[0][0] == "ident" else ""
            if head in ("else", "end"):
                if top:
                    raise TemplateSyntaxError(f"{_line_of(self.source, pos)}: unexpected <<{head}>>")
                return nodes
            self.index += 1
            nodes.append(self.action(head, tokens, pos))
        if not top:
            raise TemplateSyntaxError("unexpected EOF: missing <<end>>")
        return nodes

    def action(self, head: str, tokens: list[tuple[str, str]], pos: int) -> Node:
        where = _line_of(self.source, pos)
        if head in ("if", "range", "with"):
            return self.control(head, tokens[1:], where)
        if head in ("define", "template", "block", "break", "continue"):
            raise TemplateSyntaxError(f"{where}: <<{head}>> is not supported in adapter templates")
        return Action(_PipelineParser(tokens, where).pipeline(allow_decl=True))

    def control(self, head: str, tokens: list[tuple[str, str]], where: str) -> Control:
        pipe = _PipelineParser(tokens, where).pipeline(allow_decl=True, allow_two=head == "range")
        body = self.parse_list()
        else_body: list[Node] = []
        kind, text, pos = self.parts[self.index]
        words = _tokens(text, where)
        if words[0][1] == "else":
            self.index += 1
            if len(words) > 1 and words[1][1] in ("if", "with"):
                # `else if` is shorthand for `else` + nested `if` sharing the one `end`.
                else_body = [self.control(words[1][1], words[2:], where)]
                return Control(kind=head, pipeline=pipe, body=tuple(body), else_body=tuple(else_body))
            if len(words) > 1:
                raise TemplateSyntaxError(f"{where}: unexpected {words[1][1]!r} after else")
            else_body = self.parse_list()
            kind, text, pos = self.parts[self.index]
            words = _tokens(text, where)
        if words[0][1] != "end" or len(words) > 1:
            raise TemplateSyntaxError(f"{where}: expected <<end>> for <<{head}>>")
        self.index += 1
        return Control(kind=head, pipeline=pipe, body=tuple(body), else_body=tuple(else_body))


class _PipelineParser:
    def __init__(self, tokens: list[tuple[str, str]], where: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.where = where

    def error(self, message: str) -> TemplateSyntaxError:
        return TemplateSyntaxError(f"{self.where}: {message}")

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("eof", "")

    def pipeline(self, *, allow_decl: bool, allow_two: bool = False, until: str = "eof") -> Pipeline:
        decl, assign = self.declaration(allow_two) if allow_decl else ((), False)
        commands: list[Command] = []
        while True:
            commands.append(self.command())
            kind, value = self.peek()
            if value == "|":
                self.pos += 1
                continue
            if (until == ")" and value == ")") or (until == "eof" and kind == "eof"):
                break
            raise self.error(f"unexpected {value or 'end of action'!r} in pipeline")
        if not commands[0].args:
            raise self.error("missing value for command")
        return Pipeline(decl=decl, assign=assign, commands=tuple(commands))

    def declaration(self, allow_two: bool) -> tuple[tuple[str, ...], bool]:
        names: list[str] = []
        start = self.pos
        while self.peek()[0] == "var" and "." not in self.peek()[1]:
            names.append(self.peek()[1])
            self.pos += 1
            if self.peek()[1] == "," and allow_two and len(names) == 1:
                self.pos += 1
                continue
            break
        if names and self.peek()[0] == "declare":
            self.pos += 1
            return tuple(names), False
        if len(names) == 1 and self.peek() == ("op", "="):
            self.pos += 1
            return tuple(names), True
        self.pos = start
        return (), False

    def command(self) -> Command:
        args: list[Any] = []
        while self.peek()[0] != "eof" and self.peek()[1] not in ("|", ")"):
            args.append(self.operand())
        if len(args) > 1 and not isinstance(args[0], FuncName):
            raise self.error(f"can't give argument to non-function {args[0]}")
        if not args:
            raise self.error("missing value for command")
        return Command(args=tuple(args))

    def operand(self) -> Any:
        kind, value = self.peek()
        self.pos += 1
        if kind == "field":
            return FieldChain(tuple(value[1:].split(".")))
        if kind == "var":
            name, *chain = value.split(".")
            return Variable(name=name, chain=tuple(chain))
        if kind == "dot":
            return Dot()
        if kind == "string":
            return Literal(_unquote(value, self))
        if kind == "raw":
            return Literal(value[1:-1])
        if kind == "number":
            return Literal(float(value) if re.search(r"[.eE]", value) and "x" not in value else int(value, 0))
        if value == "(":
            inner = self.pipeline(allow_decl=False, until=")")
            self.pos += 1
            return SubPipeline(inner)
        if kind == "ident":
            if value in ("true", "false"):
                return Literal(value == "true")
            if value == "nil":
                return Literal(None)
            if value in _FUNCS:
                return FuncName(value)
            raise self.error(f'function "{value}" not defined')
        raise self.error(f"unexpected {value!r} in operand")


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "\\": "\\", '"': '"', "'": "'"}  # fmt: skip


def _unquote(token: str, parser: _PipelineParser) -> str:
    """Go interpreted string literal -> text."""

    def replace(match: re.Match[str]) -> str:
        esc = match.group(1)
        if esc[0] in _ESCAPES:
            return _ESCAPES[esc[0]]
        if esc[0] in "xuU":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        raise parser.error(f"invalid escape \\{esc} in string literal")

    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", replace, token[1:-1])


def _check_fields(nodes: Any, fields: Mapping[str, str] | None, used: set[str], *, dot_is_root: bool) -> None:
    """Record root fields read, and reject unknown ones when the root's fields are known."""
    for node in nodes:
        if isinstance(node, Action):
            _check_pipeline(node.pipeline, fields, used, dot_is_root)
        elif isinstance(node, Control):
            _check_pipeline(node.pipeline, fields, used, dot_is_root)
            inner_root = dot_is_root and node.kind == "if"
            _check_fields(node.body, fields, used, dot_is_root=inner_root)
            _check_fields(node.else_body, fields, used, dot_is_root=dot_is_root)


_WHOLE_ROOT = "."  # in `used`: the root value itself is passed on, not one of its fields


def _check_pipeline(pipe: Pipeline, fields: Mapping[str, str] | None, used: set[str], dot_is_root: bool) -> None:
    for command in pipe.commands:
        for arg in command.args:
            if (isinstance(arg, Dot) and dot_is_root) or arg == Variable("$"):
                used.add(_WHOLE_ROOT)
            chain: tuple[str, ...] = ()
            if isinstance(arg, FieldChain) and dot_is_root:
                chain = arg.chain
            elif isinstance(arg, Variable) and arg.name == "$":
                chain = arg.chain
            elif isinstance(arg, SubPipeline):
                _check_pipeline(arg.pipeline, fields, used, dot_is_root)
            if not chain:
                continue
            used.add(chain[0])
            if fields is None:
                continue
            if chain[0] not in fields:
                known = ", ".join(f".{name}" for name in fields)
                raise TemplateSyntaxError(f"can't evaluate field {chain[0]}: the fields are {known}")
            if len(chain) > 1 and fields[chain[0]] != "map":
                raise TemplateSyntaxError(
                    f"can't evaluate field {chain[1]} in .{chain[0]} (a {fields[chain[0]]})"
                )


def _collect_keys(nodes: Any, name: str, keys: list[str]) -> None:
    for node in nodes:
        if isinstance(node, Action):
            _collect_pipeline_keys(node.pipeline, name, keys)
        elif isinstance(node, Control):
            _collect_pipeline_keys(node.pipeline, name, keys)
            _collect_keys(node.body, name, keys)
            _collect_keys(node.else_body, name, keys)


def _collect_pipeline_keys(pipe: Pipeline, name: str, keys: list[str]) -> None:
    for command in pipe.commands:
        args = command.args
        if (len(args) >= 3 and args[0] == FuncName("index") and isinstance(args[1], FieldChain)
                and args[1].chain == (name,) and isinstance(args[2], Literal)
                and isinstance(args[2].value, str)):
            keys.append(args[2].value)
        for arg in args:
            if isinstance(arg, FieldChain) and len(arg.chain) == 2 and arg.chain[0] == name:
                keys.append(arg.chain[1])
            elif isinstance(arg, SubPipeline):
                _collect_pipeline_keys(arg.pipeline, name, keys)
