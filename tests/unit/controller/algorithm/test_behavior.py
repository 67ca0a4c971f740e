"""Normalization: stabilization windows, policies, legacy rules, scale events, API defaults.
Cases from horizontal_test.go (TestScalingWithRules, TestNormalizeDesiredReplicas*,
TestStoreScaleEvents, TestConvertDesiredReplicasWithRules) and from the spec's rules."""

from __future__ import annotations

import json

import pytest

from controller.algorithm import behavior as bh
from controller.algorithm.behavior import PolicyType, ScaleEvent, ScaleHistory, ScalingPolicy, ScalingRules, SelectPolicy
from controller.algorithm.conditions import Reason

NOW = 1000.0


def pods(value: int, period: int) -> ScalingPolicy:
    return ScalingPolicy(type=PolicyType.PODS, value=value, period_seconds=period)


def percent(value: int, period: int) -> ScalingPolicy:
    return ScalingPolicy(type=PolicyType.PERCENT, value=value, period_seconds=period)


def rules(*policies: ScalingPolicy, select: SelectPolicy = SelectPolicy.MAX, window: int | None = 0) -> ScalingRules:
    return ScalingRules(stabilization_window_seconds=window, select_policy=select, policies=policies)


def events(*pairs: tuple[int, float]) -> tuple[ScaleEvent, ...]:
    return tuple(ScaleEvent(replica_change=change, timestamp=NOW - age) for change, age in pairs)


DEFAULT = bh.effective_behavior(bh.Behavior(), downscale_stabilization=300)


@pytest.mark.parametrize(
    ("current", "desired", "min_r", "max_r", "up", "down", "up_events", "down_events", "expected"),
    [
        pytest.param(5, 7, 3, 8, None, None, (), (), (7, Reason.DESIRED_WITHIN_RANGE), id="within range"),
        pytest.param(10, 50, 1, 1000, None, None, (), (), (20, Reason.SCALE_UP_LIMIT),
                     id="default behavior doubles per 15 s"),
        pytest.param(1, 50, 1, 1000, None, None, (), (), (5, Reason.SCALE_UP_LIMIT),
                     id="default behavior adds at least 4 pods"),
        pytest.param(10, 500, 1, 1000, rules(pods(100, 60), percent(100, 60)), None, (), (),
                     (110, Reason.SCALE_UP_LIMIT), id="pods policy larger than percent policy"),
        pytest.param(10, 50, 1, 1000, rules(pods(30, 60)), None, (), (), (40, Reason.SCALE_UP_LIMIT),
                     id="pod policy limitation"),
        pytest.param(10, 50, 1, 1000, rules(percent(200, 60)), None, (), (), (30, Reason.SCALE_UP_LIMIT),
                     id="percent policy limitation"),
        pytest.param(10, 50, 1, 1000, rules(pods(4, 60), percent(200, 60), select=SelectPolicy.MIN), None, (), (),
                     (14, Reason.SCALE_UP_LIMIT), id="selectPolicy Min takes the smallest scale-up limit"),
        pytest.param(10, 50, 1, 1000, rules(pods(4, 60), select=SelectPolicy.DISABLED), None, (), (),
                     (10, Reason.SCALE_UP_LIMIT), id="scale-up Disabled keeps current"),
        pytest.param(100, 500, 1, 200, rules(pods(300, 60)), None, ((1, 100), (5, 60), (9, 20)), (),
                     (200, Reason.TOO_MANY_REPLICAS), id="maxReplicas limits a large policy with events"),
        pytest.param(100, 200, 1, 1000, rules(pods(10, 60)), None, ((5, 30), (9, 20)), (),
                     (100, Reason.SCALE_UP_LIMIT),
                     id="recent scale-ups consume the budget: limit 100-14+10 raised to current"),
        pytest.param(10, 20, 1, 1000, rules(pods(2, 60)), None, (), ((4, 30),), (16, Reason.SCALE_UP_LIMIT),
                     id="recent scale-downs are added back to the period start"),
        pytest.param(3, 4, 1, 1000, rules(percent(10, 60)), None, (), (), (4, Reason.DESIRED_WITHIN_RANGE),
                     id="scale-up percent rounds up so a small percentage adds a pod"),
        pytest.param(10, 0, 1, 1000, None, rules(pods(100, 60), window=300), (), (), (1, Reason.TOO_FEW_REPLICAS),
                     id="minReplicas limits a large scale-down policy"),
        pytest.param(10, 2, 1, 1000, None, rules(pods(5, 60), window=300), (), (), (5, Reason.SCALE_DOWN_LIMIT),
                     id="scale-down pod policy limitation"),
        pytest.param(10, 5, 1, 1000, None, rules(percent(50, 60), window=300), (), (), (5, Reason.DESIRED_WITHIN_RANGE),
                     id="scale-down percent policy exactly allows it"),
        pytest.param(10, 1, 1, 1000, None, rules(percent(15, 60), window=300), (), (), (8, Reason.SCALE_DOWN_LIMIT),
                     id="scale-down percent truncates: int32(10 x 0.85) = 8"),
        pytest.param(10, 1, 1, 1000, None, rules(pods(1, 60), percent(50, 60), window=300), (), (),
                     (5, Reason.SCALE_DOWN_LIMIT), id="selectPolicy Max on scale-down takes the biggest change"),
        pytest.param(10, 1, 1, 1000, None, rules(pods(1, 60), percent(50, 60), select=SelectPolicy.MIN, window=300),
                     (), (), (9, Reason.SCALE_DOWN_LIMIT), id="selectPolicy Min on scale-down takes the smallest change"),
        pytest.param(10, 1, 1, 1000, None, rules(pods(1, 60), select=SelectPolicy.DISABLED, window=300), (), (),
                     (10, Reason.SCALE_DOWN_LIMIT), id="scale-down Disabled keeps current"),
        pytest.param(100, 2, 1, 1000, None, rules(pods(5, 120), window=300), (), ((1, 100), (5, 60), (9, 20)),
                     (100, Reason.SCALE_DOWN_LIMIT), id="scale-down budget used up by recent events"),
        pytest.param(100, 0, 5, 1000, None, rules(pods(130, 120), window=300), (), ((1, 100), (5, 60), (9, 20)),
                     (5, Reason.TOO_FEW_REPLICAS), id="minReplicas limits a scale-down with previous events"),
        pytest.param(10, 5, 1, 1000, None, rules(percent(1000, 120), window=300), (), ((10, 100), (10, 60), (10, 20)),
                     (5, Reason.DESIRED_WITHIN_RANGE), id="previous events still allowing more scale-down"),
        pytest.param(100, 500, 1, 1000, rules(pods(1000, 120), percent(100, 60), select=SelectPolicy.MIN), None,
                     ((8, 105), (12, 75), (9, 45), (11, 15)), (), (160, Reason.SCALE_UP_LIMIT),
                     id="events counted per policy period: the 60 s percent policy starts at 100-20 (not 100-40)"),
        pytest.param(100, 5, 1, 1000, None, rules(pods(110, 60), window=300), (), ((8, 105), (12, 75), (9, 45), (11, 15)),
                     (10, Reason.SCALE_DOWN_LIMIT), id="events older than the period do not count (down): 100+20-110"),
        pytest.param(10, 14, 1, 1000, rules(pods(4, 60)), None, ((3, 60),), (), (14, Reason.DESIRED_WITHIN_RANGE),
                     id="an event exactly periodSeconds old is outside the period"),
    ],
)  # fmt: skip
def test_rate_limit_with_behavior(current: int, desired: int, min_r: int, max_r: int, up: ScalingRules | None,
                                  down: ScalingRules | None, up_events: tuple, down_events: tuple,
                                  expected: tuple[int, Reason]) -> None:  # fmt: skip
    behavior = bh.effective_behavior(bh.Behavior(scale_up=up, scale_down=down), downscale_stabilization=300)
    history = ScaleHistory(scale_up_events=events(*up_events), scale_down_events=events(*down_events))
    got = bh.rate_limit_with_behavior(current=current, desired=desired, min_replicas=min_r, max_replicas=max_r,
                                      behavior=behavior, history=history, now=NOW)  # fmt: skip
    assert (got.replicas, got.reason) == expected


def test_scale_up_limit_min_policy_matches_upstream() -> None:
    """TestCalculateScaleUpLimitWithScalingRules: Min of (1+2, ceil(1 x 1.5)) = 2."""
    r = rules(pods(2, 60), percent(50, 60), select=SelectPolicy.MIN, window=300)
    assert bh.scale_up_limit(1, ScaleHistory(), r, now=NOW) == 2


def test_scale_down_percent_limit_can_go_negative() -> None:
    """TestCalculateScaleDownLimitWithBehaviors: int32(start x (1 - p/100)) may be below zero."""
    r = rules(percent(200, 60), window=300)
    assert bh.scale_down_limit(5, ScaleHistory(), r, now=NOW) == -5


@pytest.mark.parametrize(
    ("current", "desired", "min_r", "max_r", "factor", "expected"),
    [
        pytest.param(5, 7, 3, 8, 8.0, (7, Reason.DESIRED_WITHIN_RANGE), id="prenormalized desired replicas within range"),
        pytest.param(3, 1, 2, 8, 8.0, (2, Reason.TOO_FEW_REPLICAS), id="prenormalized desired replicas < minReplicas"),
        pytest.param(3, 20, 1, 100, 2.0, (6, Reason.SCALE_UP_LIMIT), id="legacy scale-up limit max(2 x current, 4)"),
        pytest.param(1, 20, 1, 100, 2.0, (4, Reason.SCALE_UP_LIMIT), id="legacy scale-up limit minimum 4"),
        pytest.param(3, 20, 1, 5, 2.0, (5, Reason.TOO_MANY_REPLICAS), id="maxReplicas below the scale-up limit"),
        pytest.param(0, 20, 0, 100, 2.0, (4, Reason.SCALE_UP_LIMIT), id="from zero the limit is 4"),
        pytest.param(10, 1, 1, 100, 2.0, (1, Reason.DESIRED_WITHIN_RANGE), id="legacy path never rate-limits scale-down"),
    ],
)  # fmt: skip
def test_convert_with_rules(current: int, desired: int, min_r: int, max_r: int, factor: float, expected: tuple) -> None:
    got = bh.convert_with_rules(current=current, desired=desired, min_replicas=min_r, max_replicas=max_r,
                                scale_up_limit_factor=factor)  # fmt: skip
    assert (got.replicas, got.reason) == expected


def recs(*pairs: tuple[int, float]) -> tuple[bh.Recommendation, ...]:
    return tuple(bh.Recommendation(replicas=r, timestamp=NOW - age) for r, age in pairs)


@pytest.mark.parametrize(
    ("prenormalized", "history", "expected", "values_after"),
    [
        pytest.param(3, recs((1, 120), (2, 60)), (3, Reason.READY_FOR_NEW_SCALE), [1, 2, 3], id="no stabilize"),
        pytest.param(3, recs((10, 600), (4, 60), (5, 120), (9, 540)), (5, Reason.SCALE_DOWN_STABILIZED),
                     [10, 4, 5, 3], id="stabilize - old recommendations: the last stale one is replaced"),
        pytest.param(3, recs((8, 299)), (8, Reason.SCALE_DOWN_STABILIZED), [8, 3], id="inside the 300 s window"),
        pytest.param(3, recs((8, 300)), (3, Reason.READY_FOR_NEW_SCALE), [3], id="exactly 300 s old is outside"),
        pytest.param(3, (), (3, Reason.READY_FOR_NEW_SCALE), [3], id="empty history appends"),
    ],
)  # fmt: skip
def test_stabilize_legacy(prenormalized: int, history: tuple, expected: tuple, values_after: list[int]) -> None:
    st = bh.stabilize_legacy(history, prenormalized=prenormalized, now=NOW, window=300)
    assert (st.replicas, st.reason) == expected
    assert [r.replicas for r in st.recommendations] == values_after
    assert st.recommendations[values_after.index(prenormalized)].timestamp == NOW


@pytest.mark.parametrize(
    ("current", "prenormalized", "up", "down", "history", "expected", "values_after"),
    [
        pytest.param(1, 100, 0, 0, recs((10, 600), (9, 540)), (100, Reason.READY_FOR_NEW_SCALE), [10, 100],
                     id="no scale up stabilization, reuse recommendation element"),
        pytest.param(100, 3, 0, 180, recs((10, 600), (4, 60), (5, 120), (9, 540)), (5, Reason.SCALE_DOWN_STABILIZED),
                     [10, 4, 5, 3], id="scale down stabilization, reuse one of obsolete recommendation element"),
        pytest.param(2, 1, 300, 300, recs((2, 6000), (3, 180)), (2, Reason.SCALE_DOWN_STABILIZED), [1, 3],
                     id="scale up and down stabilization, do not scale up when prenormalized rec goes down"),
        pytest.param(2, 3, 300, 300, recs((2, 6000), (1, 180)), (2, Reason.SCALE_UP_STABILIZED), [3, 1],
                     id="scale up and down stabilization, do not scale down when prenormalized rec goes up"),
        pytest.param(5, 10, 60, 0, recs((6, 30), (8, 10)), (6, Reason.SCALE_UP_STABILIZED), [6, 8, 10],
                     id="scale-up window: the lowest recent recommendation wins"),
        pytest.param(5, 10, 0, 0, recs((5, 0)), (10, Reason.READY_FOR_NEW_SCALE), [10],
                     id="a window of 0 excludes even a sample recorded now"),
    ],
)  # fmt: skip
def test_stabilize_with_behavior(current: int, prenormalized: int, up: int, down: int, history: tuple,
                                 expected: tuple, values_after: list[int]) -> None:  # fmt: skip
    st = bh.stabilize_with_behavior(history, prenormalized=prenormalized, current=current, now=NOW,
                                    up_window=up, down_window=down)  # fmt: skip
    assert (st.replicas, st.reason) == expected
    assert [r.replicas for r in st.recommendations] == values_after


@pytest.mark.parametrize(
    ("prev", "rules_", "expected"),
    [
        pytest.param((), rules(pods(10, 60), percent(100, 60)), [(5, False)], id="empty entries with two-policy-behavior"),
        pytest.param(((7, 61, False),), rules(pods(10, 60)), [(5, False)],
                     id="one outdated entry to be replaced"),
        pytest.param(((8, 29, False), (6, 59, False), (7, 61, False), (9, 61, False)),
                     rules(pods(10, 60), percent(100, 30)), [(8, False), (6, False), (7, True), (5, False)],
                     id="replace one entry, use policies with different periods"),
        pytest.param(((7, 30, True), (3, 10, False)), rules(pods(10, 60)), [(5, False), (3, False)],
                     id="an entry flagged outdated earlier is reused even inside the period"),
    ],
)  # fmt: skip
def test_record_scale_stores_events_like_upstream(prev: tuple, rules_: ScalingRules, expected: list) -> None:
    old = tuple(ScaleEvent(replica_change=c, timestamp=NOW - age, outdated=o) for c, age, o in prev)
    for up in (True, False):
        behavior = bh.Behavior(scale_up=rules_) if up else bh.Behavior(scale_down=rules_)
        history = ScaleHistory(scale_up_events=old) if up else ScaleHistory(scale_down_events=old)
        new = bh.record_scale(history, behavior=behavior, previous=10, new=15 if up else 5, now=NOW)
        stored = new.scale_up_events if up else new.scale_down_events
        assert [(e.replica_change, e.outdated) for e in stored] == expected


def test_record_scale_without_behavior_stores_nothing() -> None:
    history = ScaleHistory(scale_up_events=events((7, 61)))
    assert bh.record_scale(history, behavior=None, previous=10, new=15, now=NOW) is history


def test_record_scale_leaves_the_input_history_untouched() -> None:
    history = ScaleHistory(scale_up_events=events((7, 61)))
    bh.record_scale(history, behavior=bh.Behavior(scale_up=rules(pods(1, 60))), previous=1, new=2, now=NOW)
    assert history.scale_up_events == events((7, 61))


def test_effective_behavior_fills_unset_fields_one_by_one() -> None:
    given = bh.Behavior(scale_up=ScalingRules(select_policy=SelectPolicy.MIN),
                        scale_down=ScalingRules(policies=(pods(1, 30),), tolerance=0.05))  # fmt: skip
    eff = bh.effective_behavior(given, downscale_stabilization=120)
    assert eff.scale_up == ScalingRules(stabilization_window_seconds=0, select_policy=SelectPolicy.MIN,
                                        policies=bh.DEFAULT_SCALE_UP_POLICIES)  # fmt: skip
    assert eff.scale_down == ScalingRules(stabilization_window_seconds=120, select_policy=SelectPolicy.MAX,
                                          policies=(pods(1, 30),), tolerance=0.05)  # fmt: skip


def test_default_behavior_matches_the_api_defaults() -> None:
    assert DEFAULT.scale_up is not None and DEFAULT.scale_down is not None
    assert [(p.type, p.value, p.period_seconds) for p in DEFAULT.scale_up.policies or ()] == [
        (PolicyType.PODS, 4, 15), (PolicyType.PERCENT, 100, 15)]  # fmt: skip
    assert [(p.type, p.value, p.period_seconds) for p in DEFAULT.scale_down.policies or ()] == [
        (PolicyType.PERCENT, 100, 15)]  # fmt: skip
    assert (DEFAULT.scale_up.stabilization_window_seconds, DEFAULT.scale_down.stabilization_window_seconds) == (0, 300)


def test_scale_history_round_trips_through_json() -> None:
    history = ScaleHistory(recommendations=recs((3, 10), (5, 0)), scale_up_events=events((2, 30)),
                           scale_down_events=(ScaleEvent(replica_change=1, timestamp=NOW - 90, outdated=True),))  # fmt: skip
    assert ScaleHistory.from_dict(json.loads(json.dumps(history.to_dict()))) == history


def test_scale_history_from_malformed_data_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="malformed scale history"):
        ScaleHistory.from_dict({"recommendations": [["x", 1]]})
