"""kubecommon.singleflight: concurrent identical calls reach the backend once."""

from __future__ import annotations

import asyncio

import pytest

from kubecommon.singleflight import SingleFlight


class Backend:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()

    async def read(self, key: str) -> str:
        self.calls.append(key)
        await self.release.wait()
        if key == "bad":
            raise LookupError(f"no {key}")
        return f"value of {key}"


async def test_concurrent_callers_of_one_key_share_one_call_and_other_keys_do_not() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    backend = Backend()
    same = [asyncio.create_task(flights.do("a", lambda: backend.read("a"))) for _ in range(5)]
    other = asyncio.create_task(flights.do("b", lambda: backend.read("b")))
    await asyncio.sleep(0)
    assert len(flights) == 2
    backend.release.set()
    assert await asyncio.gather(*same, other) == ["value of a"] * 5 + ["value of b"]
    assert sorted(backend.calls) == ["a", "b"]
    assert len(flights) == 0
    # nothing is kept once the call ended: the next caller asks the backend again
    assert await flights.do("a", lambda: backend.read("a")) == "value of a"
    assert backend.calls.count("a") == 2


async def test_one_caller_giving_up_does_not_cancel_the_call_the_others_wait_for() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    backend = Backend()
    first = asyncio.create_task(flights.do("a", lambda: backend.read("a")))
    second = asyncio.create_task(flights.do("a", lambda: backend.read("a")))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    backend.release.set()
    assert await second == "value of a"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert backend.calls == ["a"]


async def test_an_error_reaches_every_waiter_and_on_done_sees_it_after_the_key_is_forgotten() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    backend = Backend()
    seen: list[tuple[bool, int]] = []

    def on_done(task: asyncio.Task[str]) -> None:
        seen.append((task.exception() is not None, len(flights)))

    waiters = [asyncio.create_task(flights.do("bad", lambda: backend.read("bad"), on_done)) for _ in range(3)]
    await asyncio.sleep(0)
    backend.release.set()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, LookupError) and str(r) == "no bad" for r in results)
    assert seen == [(True, 0)]  # once, with the key already gone
    assert backend.calls == ["bad"]


async def test_a_call_whose_every_waiter_gave_up_still_finishes_without_an_unretrieved_error(
        caplog: pytest.LogCaptureFixture) -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    backend = Backend()
    waiter = asyncio.create_task(flights.do("bad", lambda: backend.read("bad")))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.sleep(0)
    backend.release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(flights) == 0 and backend.calls == ["bad"]
    import gc
    gc.collect()
    assert "exception was never retrieved" not in caplog.text
