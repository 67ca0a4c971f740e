"""Parse-tree nodes of the Go-template subset (see `gotemplate`). Plain frozen values; no logic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Dot:
    def __str__(self) -> str:
        return "."


@dataclass(frozen=True, slots=True)
class FieldChain:
    chain: tuple[str, ...]

    def __str__(self) -> str:
        return "." + ".".join(self.chain)


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    chain: tuple[str, ...] = ()

    def __str__(self) -> str:
        return ".".join((self.name, *self.chain))


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class FuncName:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Command:
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Pipeline:
    decl: tuple[str, ...]
    assign: bool
    commands: tuple[Command, ...]


@dataclass(frozen=True, slots=True)
class SubPipeline:
    pipeline: Pipeline

    def __str__(self) -> str:
        return "(...)"


@dataclass(frozen=True, slots=True)
class Action:
    pipeline: Pipeline


@dataclass(frozen=True, slots=True)
class Control:
    kind: str  # "if" | "range" | "with"
    pipeline: Pipeline
    body: tuple[Any, ...]
    else_body: tuple[Any, ...]


Node = Text | Action | Control
