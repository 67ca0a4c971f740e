"""QueryCache: bounded, oldest out first, failures not remembered."""

from __future__ import annotations

import pytest

from adapter.rules.query import PromQL
from adapter.services.query_cache import QueryCache


def test_bounded_and_oldest_entry_goes_first() -> None:
    cache, rendered = QueryCache(max_entries=2), []

    def render(text: str):
        return lambda: rendered.append(text) or PromQL(text)

    for key in ("a", "b", "a", "c", "a", "b"):
        cache.get(key, render(key))
    # the hit on "a" does not refresh it: "c" evicts "a", then "a" evicts "b", "b" evicts "c"
    assert rendered == ["a", "b", "c", "a", "b"]
    assert len(cache) == 2


def test_render_errors_are_not_cached() -> None:
    cache = QueryCache()

    def broken() -> PromQL:
        raise ValueError("bad rule")

    with pytest.raises(ValueError):
        cache.get("k", broken)
    assert cache.get("k", lambda: PromQL("up")) == "up"
