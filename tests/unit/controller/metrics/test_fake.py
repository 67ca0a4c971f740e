"""The map-backed MetricsSource answers what a test set, and fails like an API server otherwise."""

import pytest

from controller.algorithm.pods import PodMetric
from controller.algorithm.spec import FetchFailure, ObjectSample, PodSamples, SourceType
from controller.metrics.fake import FakeMetricsSource, ObservedCall
from controller.metrics.source import MetricQuery

CPU = MetricQuery(type=SourceType.RESOURCE, name="cpu")
RPS = MetricQuery(type=SourceType.OBJECT, name="rps")
SAMPLES = PodSamples(values={"web-1": PodMetric(value=250)})


@pytest.mark.parametrize(("stored_selector", "asked_selector", "expected"), [
    (None, "app=web", SAMPLES),
    ("app=web", "app=web", SAMPLES),
    ("app=api", "app=web", None),
], ids=["any-selector", "exact-selector", "other-selector-unanswered"])
async def test_answers_by_namespace_query_and_selector(stored_selector, asked_selector, expected):
    fake = FakeMetricsSource()
    fake.answer("shop", CPU, SAMPLES, pod_selector=stored_selector)
    got = await fake.observe("shop", CPU, pod_selector=asked_selector)
    if expected is None:
        assert isinstance(got, FetchFailure) and "cpu" in got.message
    else:
        assert got == expected
    assert fake.calls == [ObservedCall(namespace="shop", query=CPU, pod_selector=asked_selector)]


async def test_forget_turns_an_answer_into_a_failure():
    fake = FakeMetricsSource()
    fake.answer("shop", RPS, ObjectSample(value=3000, timestamp=10.0))
    assert await fake.observe("shop", RPS, pod_selector="") == ObjectSample(value=3000, timestamp=10.0)
    assert isinstance(await fake.observe("other", RPS, pod_selector=""), FetchFailure)
    fake.forget("shop", RPS)
    assert isinstance(await fake.observe("shop", RPS, pod_selector=""), FetchFailure)
