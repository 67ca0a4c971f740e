"""Cyclic garbage collector settings for a long-running serving process (both binaries).

Why: both binaries hold large, long-lived heaps (watch caches of every pod and workload, compiled
rules, per-autoscaler state) and allocate many short-lived containers per request or sync, which
reference counting frees. With CPython's defaults the cyclic collector runs a young collection
every 700 allocations and promotes the survivors until a full collection walks the whole heap:
measured in the controller at 10,000 autoscalers, full collections paused the event loop for
1.2-2.3 s (every sync due in that time started late), and in the adapter they cost a quarter of
a 2,000-pod request's CPU. Cyclic garbage is rare in both, so: collect once, move everything
alive into the permanent generation (`gc.freeze`, never walked again; freed objects are still
freed by reference counting), and collect the young generations less often.

Non-goals: disabling the collector (cycles from exceptions and tasks still get collected).
"""

from __future__ import annotations

import gc

__all__ = ["GC_THRESHOLDS", "freeze_heap"]

#: gc.set_threshold: a young collection per 50,000 net allocations (bounding what cyclic garbage
#: may hold to a few MB), as before for the older generations.
GC_THRESHOLDS = (50_000, 20, 20)


def freeze_heap() -> None:
    """Collect, freeze what is alive now, and set GC_THRESHOLDS. Call once the process holds its
    long-lived state (after start-up, after the watch caches' first lists); calling again later
    freezes what has accumulated since."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
