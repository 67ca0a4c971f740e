"""`quick_init`: a cheaper `__init__` for the frozen values built on every sync.

A frozen dataclass's generated `__init__` stores each field with `object.__setattr__(self, name,
value)` (plain assignment is what `frozen` forbids): a generic attribute lookup per field. About 35
values are built per sync, and that store was a third of a backtest's decide time. `quick_init`
replaces `__init__` only, with one of the same signature (keyword-only fields, the same defaults
and default factories) that stores through each slot's own descriptor. Everything else the
dataclass generated stays: fields, eq, hash, repr, `dataclasses.replace`, pickling, and
`FrozenInstanceError` on assignment.

    @quick_init
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Recommendation: ...

Non-goals: classes with `__post_init__`, `InitVar`s, `init=False` or positional fields (refused
when the class is defined). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["quick_init"]

T = TypeVar("T")


class _Factory:
    """The default of a field that has a default factory (never a value a caller passes)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def quick_init(cls: type[T]) -> type[T]:
    """Give the frozen slotted keyword-only dataclass `cls` the cheaper `__init__`."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__qualname__} is not a frozen slotted dataclass without __post_init__")
    bound: dict[str, Any] = {"_FACTORY": _FACTORY}
    args: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or not f.kw_only or f.name not in cls.__dict__:
            raise TypeError(f"quick_init: {cls.__qualname__}.{f.name} is not a keyword-only slot field")
        name = f.name
        bound[f"_set_{name}"] = cls.__dict__[name].__set__
        if f.default is not dataclasses.MISSING:
            bound[f"_default_{name}"] = f.default
            args.append(f"{name}=_default_{name}")
        elif f.default_factory is not dataclasses.MISSING:
            bound[f"_factory_{name}"] = f.default_factory
            args.append(f"{name}=_FACTORY")
            body.append(f"if {name} is _FACTORY: {name} = _factory_{name}()")
        else:
            args.append(name)
        body.append(f"_set_{name}(self, {name})")
    lines = "\n".join(f"        {line}" for line in body or ["pass"])
    star = ", *, " + ", ".join(args) if args else ""
    source = f"def _make({', '.join(bound)}):\n    def __init__(self{star}):\n{lines}\n    return __init__\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # as dataclasses itself builds __init__: a signature known only at run time
    init = namespace["_make"](**bound)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in dataclasses.fields(cls)} | {"return": None}  # type: ignore[arg-type]
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
