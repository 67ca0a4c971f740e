"""`quick_init` gives the algorithm's per-sync values a cheaper `__init__` and nothing else: every
decorated class takes the same keywords, defaults and default factories as the dataclass-generated
one, builds equal values, stays frozen, and refuses the same bad calls."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass
from typing import Any

import pytest

from controller.algorithm import behavior, conditions, decision, multi_metric, pods, ratio, sources, spec, sync
from controller.algorithm.values import quick_init

MODULES = (behavior, conditions, decision, multi_metric, pods, ratio, sources, spec, sync)
DECORATED = sorted(
    (obj for m in MODULES for obj in vars(m).values()
     if inspect.isclass(obj) and obj.__module__ == m.__name__
     and any(v.startswith("_set_") for v in getattr(obj.__init__, "__code__", quick_init.__code__).co_freevars)),
    key=lambda c: c.__qualname__,
)  # fmt: skip


def _twin(cls: type[Any]) -> type[Any]:
    """The same fields as a plain frozen slotted keyword-only dataclass (generated __init__)."""
    specs = []
    for f in dataclasses.fields(cls):
        extra: dict[str, Any] = {}
        if f.default is not dataclasses.MISSING:
            extra["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            extra["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(**extra)))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True, kw_only=True)


def _required(cls: type[Any]) -> dict[str, Any]:
    """A value for every field without a default (a marker object: the store is what is checked)."""
    return {f.name: object() for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}  # fmt: skip


def test_the_per_sync_values_are_decorated() -> None:
    names = {c.__qualname__ for c in DECORATED}
    assert {"Decision", "MetricTrace", "Proposal", "Condition", "SyncInput", "HpaStatus", "PodMetric"} <= names


@pytest.mark.parametrize("cls", DECORATED, ids=lambda c: c.__qualname__)
def test_same_signature_and_values_as_the_generated_init(cls: type[Any]) -> None:
    twin = _twin(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    given = _required(cls)
    built, expected = cls(**given), twin(**given)
    for f in dataclasses.fields(cls):
        assert getattr(built, f.name) == getattr(expected, f.name), f.name
        if f.default_factory is not dataclasses.MISSING:  # a fresh value per instance
            assert getattr(built, f.name) is not getattr(cls(**given), f.name)
    assert repr(built).removeprefix(cls.__qualname__) == repr(expected).removeprefix(twin.__qualname__)
    assert dataclasses.replace(built) == built


@pytest.mark.parametrize("cls", DECORATED, ids=lambda c: c.__qualname__)
def test_still_frozen_and_refuses_bad_calls(cls: type[Any]) -> None:
    given = _required(cls)
    value = cls(**given)
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_field'"):
        cls(**given, no_such_field=1)
    with pytest.raises(TypeError, match="positional"):
        cls(*given.values()) if given else cls(1)
    if given:
        missing = next(iter(given))
        with pytest.raises(TypeError, match=f"missing 1 required keyword-only argument: '{missing}'"):
            cls(**{k: v for k, v in given.items() if k != missing})


def test_values_round_trip_through_pickle() -> None:
    d = sync.decide(spec.SyncInput(spec=spec.AutoscalerSpec(max_replicas=3), now=0.0,
                                   scale=spec.ScaleTarget(spec_replicas=0, status_replicas=0)),
                    spec.ControllerConfig())  # fmt: skip
    assert pickle.loads(pickle.dumps(d)) == d


class _Plain:
    x: int


@dataclass(slots=True, kw_only=True)
class _Mutable:
    x: int


@dataclass(frozen=True, kw_only=True)
class _NoSlots:
    x: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _PostInit:
    x: int

    def __post_init__(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class _Positional:
    x: int


@pytest.mark.parametrize("cls", [_Plain, _Mutable, _NoSlots, _PostInit, _Positional], ids=lambda c: c.__name__)
def test_refuses_classes_it_would_change(cls: type[Any]) -> None:
    with pytest.raises(TypeError, match="quick_init"):
        quick_init(cls)
