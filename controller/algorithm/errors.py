"""The one error type the pure algorithm raises: a metric could not yield a replica count.

Its message is the user-facing text upstream puts into the ScalingActive condition and the
FailedGet*Metric event (wrapped by `sources`/`multi_metric`). Pure: no I/O.
"""

from __future__ import annotations


class MetricError(ValueError):
    """A metric could not be turned into a replica proposal (bad input data, no pods, ...)."""
