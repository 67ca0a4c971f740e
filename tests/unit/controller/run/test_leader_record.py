"""The Lease record rules: who may take the lease, what acquire/renew/release write, MicroTime."""

from __future__ import annotations

import re

import pytest

from controller.run.leader_record import (LeaseRecord, acquire_spec, default_identity, may_acquire,
                                          micro_time, record_from_lease, release_spec)

T0 = 1_790_000_000.25  # 2026-09-21T14:13:20.250000Z


def rec(holder: str, *, transitions: int = 3, duration: int = 15) -> LeaseRecord:
    return LeaseRecord(holder=holder, lease_duration_seconds=duration, acquire_time="2026-01-01T00:00:00.000000Z",
                       renew_time="2026-01-01T00:00:05.000000Z", transitions=transitions)


def test_micro_time_is_utc_with_six_fraction_digits() -> None:
    assert micro_time(T0) == "2026-09-21T14:13:20.250000Z"  # UTC whatever TZ says
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", micro_time(T0))
    assert micro_time(0.0) == "1970-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(("record", "observed_for", "allowed"), [
    (rec(""), 0.0, True),
    (rec("me"), 0.0, True),
    (rec("other"), 14.9, False),
    (rec("other"), 15.0, True),
    (rec("other", duration=1), 1.0, True),
    (rec("other", duration=0), 14.0, False),
], ids=["released-or-empty", "own-lease-renews", "other-holder-fresh", "other-holder-expired",
        "released-with-1s-duration", "missing-duration-uses-configured"])
def test_may_acquire(record: LeaseRecord, observed_for: float, allowed: bool) -> None:
    assert may_acquire(record, identity="me", observed_for=observed_for, default_duration=15.0) is allowed


@pytest.mark.parametrize(("old", "transitions", "keeps_acquire_time"), [
    (None, 0, False),
    (rec("me"), 3, True),
    (rec("other"), 4, False),
    (rec(""), 4, False),
], ids=["create", "renew", "take-over", "after-release"])
def test_acquire_spec(old: LeaseRecord | None, transitions: int, keeps_acquire_time: bool) -> None:
    spec = acquire_spec(old, identity="me", lease_duration=15.0, now_wall=T0)
    assert spec["holderIdentity"] == "me"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == transitions
    assert spec["renewTime"] == micro_time(T0)
    assert (spec["acquireTime"] == "2026-01-01T00:00:00.000000Z") is keeps_acquire_time


def test_release_clears_the_holder_and_shortens_the_lease() -> None:
    spec = release_spec(rec("me"), now_wall=T0)
    assert spec == {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": micro_time(T0),
                    "renewTime": micro_time(T0), "leaseTransitions": 3}


def test_record_from_lease_reads_an_empty_or_partial_spec() -> None:
    assert record_from_lease({}) == LeaseRecord(holder="", lease_duration_seconds=0, acquire_time="",
                                                renew_time="", transitions=0)
    assert record_from_lease({"spec": {"holderIdentity": "a", "leaseTransitions": 2}}).transitions == 2


def test_identity_is_hostname_underscore_uuid() -> None:
    assert re.fullmatch(r"pod-1_[0-9a-f-]{36}", default_identity("pod-1"))
    assert default_identity("pod-1") != default_identity("pod-1")
