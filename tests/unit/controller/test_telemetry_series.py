"""ObjectGauge: the same exposition as prometheus_client's Gauge, one dict entry per series."""

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from controller.telemetry_series import ObjectGauge


def test_exposition_matches_a_prometheus_client_gauge():
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    for registry, kind in ((ours, ObjectGauge), (theirs, Gauge)):
        gauge = kind("x_replicas", "Replicas.", ["kind", "namespace", "name"], registry=registry)
        gauge.labels("PromAutoscaler", "shop", "web").set(3)
        gauge.labels("PromAutoscaler", "shop", 'a"b').set(0.5)
        gauge.labels("PromAutoscaler", "shop", "gone").set(1)
        gauge.remove("PromAutoscaler", "shop", "gone")
    assert generate_latest(ours) == generate_latest(theirs)


def test_remove_of_an_absent_series_and_wrong_label_count_raise_like_gauge():
    gauge = ObjectGauge("x", "X.", ["a"], registry=CollectorRegistry())
    with pytest.raises(KeyError):
        gauge.remove("missing")
    with pytest.raises(ValueError):
        gauge.labels("a", "b")
    gauge.labels("a").set(1)
    assert len(gauge) == 1


def test_a_name_taken_twice_is_refused_by_the_registry():
    registry = CollectorRegistry()
    ObjectGauge("x", "X.", ["a"], registry=registry)
    with pytest.raises(ValueError):
        Gauge("x", "X.", ["a"], registry=registry)
