"""client-go's event correlation: dedupe into counts, aggregate similar messages, spam filter."""

import pytest

from controller.kube.event_correlator import (
    AGGREGATE_INTERVAL_SECONDS, MAX_SIMILAR_MESSAGES, SPAM_BURST, SPAM_REFILL_SECONDS, Action, EventCorrelator,
    EventRecord,
)

T0 = 1_795_608_000.0


def record(message="New size: 3; reason: cpu above target", *, reason="SuccessfulRescale", name="web", uid="u1"):
    return EventRecord(kind="PromAutoscaler", api_version="autoscaling.prom-autoscaler.io/v1alpha1",
                       namespace="shop", name=name, uid=uid, type="Normal", reason=reason, message=message,
                       component="prom-autoscaler-controller")


def test_repeats_become_count_patches_of_one_event():
    c = EventCorrelator()
    first = c.correlate(record(), now=T0)
    second = c.correlate(record(), now=T0 + 15)
    third = c.correlate(record(), now=T0 + 30)
    assert (first.action, first.count) == (Action.CREATE, 1)
    assert (second.action, second.count, third.count) == (Action.PATCH, 2, 3)
    assert first.event_name == second.event_name == third.event_name
    assert first.event_name.startswith("web.")
    assert (third.first_timestamp, third.last_timestamp) == (T0, T0 + 30)


@pytest.mark.parametrize(("other", "same_event"), [
    pytest.param(record("New size: 4; reason: cpu above target"), False, id="other-message"),
    pytest.param(record(reason="FailedRescale"), False, id="other-reason"),
    pytest.param(record(name="db"), False, id="other-object"),
    pytest.param(record(), True, id="identical"),
])
def test_event_identity(other, same_event):
    c = EventCorrelator()
    first = c.correlate(record(), now=T0)
    assert (c.correlate(other, now=T0 + 1).event_name == first.event_name) is same_event


def test_two_events_in_one_instant_get_distinct_names():
    c = EventCorrelator()
    a = c.correlate(record("a"), now=T0)
    b = c.correlate(record("b"), now=T0)
    assert a.event_name != b.event_name


def test_similar_messages_are_combined_from_the_tenth_on():
    c = EventCorrelator()
    results = [c.correlate(record(f"metric {i} failed"), now=T0 + i) for i in range(MAX_SIMILAR_MESSAGES + 2)]
    assert all(r.action is Action.CREATE and not r.record.message.startswith("(combined") for r in results[:9])
    combined = results[MAX_SIMILAR_MESSAGES - 1:]
    assert combined[0].record.message == "(combined from similar events): metric 9 failed"
    assert (combined[0].action, combined[1].action, combined[1].count) == (Action.CREATE, Action.PATCH, 2)
    assert combined[1].event_name == combined[0].event_name


def test_aggregation_window_expires():
    c = EventCorrelator()
    for i in range(MAX_SIMILAR_MESSAGES - 1):
        c.correlate(record(f"m{i}"), now=T0)
    late = c.correlate(record("late"), now=T0 + AGGREGATE_INTERVAL_SECONDS + 1)
    assert late.record.message == "late"


def test_spam_filter_burst_then_one_per_five_minutes():
    c = EventCorrelator()
    accepted = [c.correlate(record(f"distinct {i}", reason=f"R{i}"), now=T0) for i in range(SPAM_BURST + 5)]
    assert sum(r is not None for r in accepted) == SPAM_BURST
    assert c.correlate(record("x", reason="X"), now=T0 + SPAM_REFILL_SECONDS / 2) is None
    assert c.correlate(record("y", reason="Y"), now=T0 + SPAM_REFILL_SECONDS) is not None
    assert c.correlate(record("z", reason="Z"), now=T0 + SPAM_REFILL_SECONDS + 1) is None
    # another object has its own bucket
    assert c.correlate(record(name="db", uid="u2"), now=T0) is not None


def test_forget_recreates_an_expired_event():
    c = EventCorrelator()
    c.correlate(record(), now=T0)
    patch = c.correlate(record(), now=T0 + 4000)
    fresh = c.forget(patch)
    assert (fresh.action, fresh.count, fresh.first_timestamp) == (Action.CREATE, 1, T0 + 4000)
    again = c.correlate(record(), now=T0 + 4015)
    assert (again.action, again.event_name, again.count) == (Action.PATCH, fresh.event_name, 2)
