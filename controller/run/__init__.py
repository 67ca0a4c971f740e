"""The controller's runtime: the due-time queue, the worker pool, retry limits, leader election.

`queue` decides when each autoscaler syncs (own period, stable phase, immediate on change, never
two workers on one key, rate-limited retries); `workers` runs the syncs; `leader` (Lease-based
election) says whether this replica may run them.
"""
