"""The Lease record of leader election, as client-go's resourcelock writes it: pure functions.

Job: read a `coordination.k8s.io/v1` Lease's spec into a `LeaseRecord`; build the spec a
candidate writes to acquire or renew (leaseTransitions +1 on a change of holder, acquireTime
kept while the same holder renews) and the spec a leader writes to release (holderIdentity
cleared, leaseDurationSeconds 1, as `ReleaseOnCancel` does); decide whether a candidate may
take the lease; format MicroTime in UTC with microseconds; build the "became leader" Event.
Times are parameters: `now_wall` (epoch seconds) only goes into the written timestamps.

Non-goals: I/O, timing, retries (leader.py).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubecommon import kubetime

__all__ = ["LEASE_API", "LeaseRecord", "acquire_spec", "default_identity", "leader_event",
           "micro_time", "may_acquire", "record_from_lease", "release_spec"]

LEASE_API = "coordination.k8s.io/v1"
_EVENT_SOURCE = "prom-autoscaler-controller"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseRecord:
    """The election fields of a Lease spec; equality is what "the record changed" means."""

    holder: str
    lease_duration_seconds: int
    acquire_time: str
    renew_time: str
    transitions: int


def default_identity(hostname: str | None = None) -> str:
    """client-go's `<hostname>_<uuid>`: unique per process even when pods share a name."""
    return f"{hostname or socket.gethostname()}_{uuid.uuid4()}"


def micro_time(now_wall: float) -> str:
    """metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits (`kubecommon.kubetime`)."""
    return kubetime.format_micro_time(now_wall)


def record_from_lease(lease: Mapping[str, Any]) -> LeaseRecord:
    spec = lease.get("spec") or {}
    return LeaseRecord(holder=str(spec.get("holderIdentity") or ""),
                       lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
                       acquire_time=str(spec.get("acquireTime") or ""),
                       renew_time=str(spec.get("renewTime") or ""),
                       transitions=int(spec.get("leaseTransitions") or 0))


def may_acquire(record: LeaseRecord, *, identity: str, observed_for: float,
                default_duration: float) -> bool:
    """May `identity` write the lease now?

    Yes when it is the holder (renew), when nobody holds it (released or never held), or when the
    record has not changed for the lease duration as measured on the candidate's own clock
    (`observed_for`: seconds since it last saw the record change). The duration is the record's
    own `leaseDurationSeconds` (a released lease says 1), else the candidate's configured one.
    """
    if record.holder in ("", identity):
        return True
    duration = record.lease_duration_seconds or default_duration
    return observed_for >= duration


def acquire_spec(old: LeaseRecord | None, *, identity: str, lease_duration: float,
                 now_wall: float) -> dict[str, Any]:
    """The spec that makes `identity` the holder: a fresh acquire or a renew of its own lease."""
    now = micro_time(now_wall)
    renewing = old is not None and old.holder == identity and old.acquire_time != ""
    if old is None:
        transitions = 0
    else:
        transitions = old.transitions if old.holder == identity else old.transitions + 1
    return {"holderIdentity": identity,
            "leaseDurationSeconds": max(1, int(round(lease_duration))),
            "acquireTime": old.acquire_time if renewing and old is not None else now,
            "renewTime": now,
            "leaseTransitions": transitions}


def release_spec(old: LeaseRecord, *, now_wall: float) -> dict[str, Any]:
    """What ReleaseOnCancel writes: no holder, a 1 s lease, so a standby acquires at once."""
    now = micro_time(now_wall)
    return {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
            "leaseTransitions": old.transitions}


def leader_event(*, namespace: str, lease_name: str, lease_uid: str, identity: str, became: bool,
                 now_wall: float) -> dict[str, Any]:
    """A core/v1 Event on the Lease, worded as client-go's: "<identity> became leader"."""
    now = kubetime.format_time(now_wall)
    verb = "became leader" if became else "stopped leading"
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{lease_name}.", "namespace": namespace},
            "involvedObject": {"apiVersion": LEASE_API, "kind": "Lease", "namespace": namespace,
                               "name": lease_name, "uid": lease_uid},
            "reason": "LeaderElection", "message": f"{identity} {verb}", "type": "Normal",
            "source": {"component": _EVENT_SOURCE}, "reportingComponent": _EVENT_SOURCE,
            "reportingInstance": identity, "firstTimestamp": now, "lastTimestamp": now, "count": 1}
