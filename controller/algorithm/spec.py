"""What the algorithm is asked about: the autoscaler spec, the target's scale, what was observed.

Plain frozen values converted from Kubernetes objects at the edge (`controller/kube`,
`controller/metrics`). Quantities are int milli-units (`Quantity.MilliValue()`), times float
seconds on the caller's clock.

Non-goals: parsing JSON, validation beyond what the algorithm needs. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from controller.algorithm import conditions as c
from controller.algorithm.behavior import Behavior, ScaleHistory
from controller.algorithm.conditions import Condition, EventReason, Reason
from controller.algorithm.pods import PodInfo, PodMetric, ReadinessConfig
from controller.algorithm.values import quick_init


class SourceType(StrEnum):
    RESOURCE = "Resource"
    CONTAINER_RESOURCE = "ContainerResource"
    PODS = "Pods"
    OBJECT = "Object"
    EXTERNAL = "External"


class TargetType(StrEnum):
    UTILIZATION = "Utilization"
    VALUE = "Value"
    AVERAGE_VALUE = "AverageValue"


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricTarget:
    # None when the spec leaves `type` empty: upstream reads Resource, Pods and External targets
    # by their value fields alone, and an Object target then has neither kind of target.
    type: TargetType | None
    average_utilization: int | None = None  # percent of request
    average_value: int | None = None  # milli-units
    value: int | None = None  # milli-units
    # Object / External only, with minReplicas 0: the level above which the workload must run
    # at all (KEDA's activationThreshold), milli-units; None: 0 (see `controller.algorithm.zero`).
    activation_value: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectRef:
    kind: str
    name: str
    api_version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSpec:
    """One `spec.metrics[]` entry. `type` stays a plain string so that an unknown source type
    reaches the algorithm and is reported (InvalidMetricSourceType) instead of crashing."""

    type: str
    name: str = ""  # resource name (cpu, memory) or metric name
    target: MetricTarget | None = None
    container: str = ""  # ContainerResource only
    described_object: ObjectRef | None = None  # Object only
    selector: str = "nil"  # metric selector as printed in names/messages (upstream `%+v`)


class PredictionMode(StrEnum):
    """`spec.prediction.mode`: Off (reactive only), ForecastOnly (forecast, score and report, never
    act on it), Active (scale ahead of the forecast, while its accuracy holds)."""

    OFF = "Off"
    FORECAST_ONLY = "ForecastOnly"
    ACTIVE = "Active"


DEFAULT_HORIZON_SECONDS = 300
DEFAULT_LOOKBACK_SECONDS = 14 * 86_400


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionSpec:
    """`spec.prediction`: how far ahead to provide capacity and how much history to learn from."""

    mode: PredictionMode = PredictionMode.OFF
    horizon_seconds: int = DEFAULT_HORIZON_SECONDS  # pod start-up time plus one sync, typically
    lookback_seconds: int = DEFAULT_LOOKBACK_SECONDS  # at most this much history is used
    periods_seconds: tuple[int, ...] = ()  # seasonal periods to use; empty: detect daily and weekly


DEFAULT_COOLDOWN_SECONDS = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleToZero:
    """`spec.scaleToZero`: how long every activation metric must stay at or below its activation
    value before the workload goes to 0 (KEDA's cooldownPeriod). Used only with minReplicas 0."""

    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoscalerSpec:
    max_replicas: int
    min_replicas: int = 1
    metrics: tuple[MetricSpec, ...] = ()
    behavior: Behavior | None = None  # None: legacy normalization
    prediction: PredictionSpec | None = None  # None: Off (a native HPA has no such field)
    # Only read with min_replicas 0. None: upstream's HPAScaleToZero (no cooldown, activation 0), as for a
    # native HPA; a PromAutoscaler always has one (the CRD's default cooldown is 300 s).
    scale_to_zero: ScaleToZero | None = None

    @property
    def predicts(self) -> bool:
        """spec.prediction asks for forecasts (ForecastOnly or Active; absent means Off)."""
        return self.prediction is not None and self.prediction.mode is not PredictionMode.OFF


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleTarget:
    """The target's `/scale` replicas. Its status selector is the caller's to resolve: into
    `SyncInput.pods`, or into a `SelectorProblem`."""

    spec_replicas: int
    status_replicas: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerConfig:
    """kube-controller-manager flags (production defaults) and the relevant feature gates."""

    tolerance: float = 0.1
    downscale_stabilization: float = 300.0
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    scale_up_limit_factor: float = 2.0
    scale_up_limit_minimum: float = 4.0
    configurable_tolerance: bool = True  # HPAConfigurableTolerance (beta, on in 1.35)
    pod_level_resources: bool = False  # PodLevelResources


# What the metrics APIs answered for one metric spec (same index as spec.metrics).
@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PodSamples:
    """Per-pod values: resource usage summed per pod (see `pods.resource_usage_by_pod`) or a
    Pods custom metric keyed by pod name."""

    values: Mapping[str, PodMetric]


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectSample:
    value: int
    timestamp: float | None = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalSamples:
    values: tuple[int, ...]
    timestamp: float | None = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchFailure:
    """The metrics API call failed; `message` is what the client reported."""

    message: str


Observation = PodSamples | ObjectSample | ExternalSamples | FetchFailure


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MetricForecast:
    """The forecast of one metric for this sync (`controller.forecast`), in the metric's own
    milli-units: for Object and External metrics the value the metrics API serves; for Pods and
    Resource metrics the total over the target's pods (the sum the per-pod average divides).

    `value` is the highest value expected in `[now, now + horizon]`; None when there is no forecast,
    and `why` says why (too little history, the history could not be read, ...). `trusted` is the
    accuracy guard's verdict: an untrusted forecast is reported but never acted on (fallback)."""

    value: int | None
    why: str = ""
    trusted: bool = True
    # How well forecasts did lately: 1 - (forecast loss / reactive loss) over the scored past
    # forecasts (> 0: better than reacting; None: nothing scored yet). The guard trusts it above 0.
    skill: float | None = None
    history_seconds: float = 0.0  # how much history the forecast was made from


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectorProblem:
    """Why the target's selector cannot be used; built by the caller from its pod cache."""

    event_reason: EventReason
    event_message: str
    condition_reason: Reason
    condition_message: str

    @classmethod
    def missing(cls) -> SelectorProblem:
        return cls(event_reason=EventReason.SELECTOR_REQUIRED, event_message=c.MSG_SELECTOR_REQUIRED,
                   condition_reason=Reason.INVALID_SELECTOR,
                   condition_message=c.MSG_MISSING_SELECTOR)  # fmt: skip

    @classmethod
    def invalid(cls, parse_error: str) -> SelectorProblem:
        message = c.msg_invalid_selector(parse_error)
        return cls(event_reason=EventReason.INVALID_SELECTOR, event_message=message,
                   condition_reason=Reason.INVALID_SELECTOR, condition_message=message)  # fmt: skip

    @classmethod
    def ambiguous(cls, selector: str, hpas: tuple[str, ...]) -> SelectorProblem:
        message = c.msg_ambiguous_selector(selector, hpas)
        return cls(event_reason=EventReason.AMBIGUOUS_SELECTOR, event_message=message,
                   condition_reason=Reason.AMBIGUOUS_SELECTOR, condition_message=message)  # fmt: skip


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MetricStatus:
    """One `status.currentMetrics[]` entry, milli-units (formatting is the writer's job)."""

    type: SourceType
    name: str
    container: str = ""
    value: int | None = None
    average_value: int | None = None
    average_utilization: int | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-ready, with the API's field names (values stay milli-units)."""
        out: dict[str, object] = {"type": str(self.type), "name": self.name}
        for key, value in (("container", self.container or None), ("value", self.value),
                           ("averageValue", self.average_value),
                           ("averageUtilization", self.average_utilization)):  # fmt: skip
            if value is not None:
                out[key] = value
        return out


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class HpaStatus:
    current_replicas: int = 0
    desired_replicas: int = 0
    last_scale_time: float | None = None
    current_metrics: tuple[MetricStatus | None, ...] = ()  # None: that metric failed
    conditions: tuple[Condition, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class SyncInput:
    """Everything one sync of one autoscaler decides from. `pods` are the pods selected by the
    target's selector; `history=None` means the controller has none yet (first sync)."""

    spec: AutoscalerSpec
    scale: ScaleTarget
    now: float
    status: HpaStatus = field(default_factory=HpaStatus)
    pods: tuple[PodInfo, ...] = ()
    observations: tuple[Observation, ...] = ()
    selector_problem: SelectorProblem | None = None
    history: ScaleHistory | None = None
    namespace: str = ""  # the autoscaler's, for upstream's "unable to get external metric <ns>/..."
    forecasts: tuple[MetricForecast | None, ...] = ()  # per metric (same index); used per spec.prediction
