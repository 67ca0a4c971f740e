"""kubecommon.lru: the bounded least-recently-used map behind the adapter's caches."""

import pytest

from kubecommon.lru import LRUCache


@pytest.mark.parametrize("steps, expected", [
    pytest.param([("put", "a"), ("put", "b"), ("put", "c")], {"b", "c"}, id="oldest dropped beyond the bound"),
    pytest.param([("put", "a"), ("put", "b"), ("get", "a"), ("put", "c")], {"a", "c"},
                 id="a hit makes the entry the most recent"),
    pytest.param([("put", "a"), ("put", "b"), ("put", "a"), ("put", "c")], {"a", "c"},
                 id="a put refreshes an existing entry"),
    pytest.param([("put", "a"), ("put", "b"), ("memo", "a"), ("memo", "c")], {"a", "c"},
                 id="a memo hit makes the entry the most recent"),
    pytest.param([("put", "a"), ("discard", "a"), ("discard", "x")], set(), id="discard forgets, absent is fine"),
])
def test_bounded_recency(steps, expected):
    cache = LRUCache(max_entries=2)
    for op, key in steps:
        if op == "put":
            cache.put(key, key.upper())
        elif op == "get":
            cache.get(key)
        elif op == "memo":
            cache.get_or_compute(key, key.upper)
        else:
            cache.discard(key)
    assert len(cache) == len(expected)
    assert {k for k in "abcx" if cache.get(k) is not None} == expected


def test_get_or_compute_computes_once_and_keeps_none():
    cache, calls = LRUCache(max_entries=4), []

    def compute():
        calls.append(1)

    assert cache.get_or_compute("k", compute) is None
    assert cache.get_or_compute("k", compute) is None
    assert calls == [1]


def test_a_failed_computation_keeps_nothing():
    cache = LRUCache(max_entries=4)
    with pytest.raises(ZeroDivisionError):
        cache.get_or_compute("k", lambda: 1 // 0)
    assert len(cache) == 0
    assert cache.get_or_compute("k", lambda: 7) == 7


def test_the_bound_must_hold_at_least_one_entry():
    with pytest.raises(ValueError, match="at least 1"):
        LRUCache(max_entries=0)
