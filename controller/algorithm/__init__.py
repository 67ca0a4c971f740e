"""The HPA algorithm, pure: pods, metrics and history in; a decision with its trace out.

Entry points: `decide(SyncInput, ControllerConfig) -> Decision`, then `complete(decision,
write_error=..., now=...)` after the caller wrote `/scale`; `failed_get_scale` when it could not
read it. The building blocks (calculators in `sources`, normalization in `behavior`, grouping in
`pods`) are importable for tests and dry runs. Facts: `../shared/spec/hpa-algorithm.md`.

No I/O, no clock reads, no asyncio/aiohttp/kubernetes imports anywhere in this package.
"""

from controller.algorithm.behavior import Behavior, ScaleHistory
from controller.algorithm.conditions import Reason
from controller.algorithm.sync import complete, decide, failed_get_scale
from controller.algorithm.decision import Decision, Outcome, Trace
from controller.algorithm.spec import AutoscalerSpec, ControllerConfig, SyncInput

__all__ = [
    "AutoscalerSpec",
    "Behavior",
    "ControllerConfig",
    "Decision",
    "Outcome",
    "Reason",
    "ScaleHistory",
    "SyncInput",
    "Trace",
    "complete",
    "decide",
    "failed_get_scale",
]
