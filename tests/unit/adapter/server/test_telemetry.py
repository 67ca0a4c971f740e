"""The adapter's own metrics: per-app registry, Prometheus call timing/errors, sample age, state."""

import pytest
from prometheus_client import generate_latest

from adapter.prometheus.api import Sample
from adapter.prometheus.errors import PrometheusTimeout
from adapter.prometheus.fake import FakePrometheus
from adapter.prometheus.instrumented import InstrumentedPrometheus
from adapter.server.telemetry import StateSource, Telemetry


def scrape(telemetry: Telemetry) -> str:
    return generate_latest(telemetry.registry).decode()


async def test_prometheus_calls_are_timed_counted_and_aged():
    fake = FakePrometheus()
    fake.set_query("up", [Sample(labels={}, value=1.0, timestamp=990.0), Sample(labels={}, value=1.0, timestamp=995.0)])
    fake.set_query("slow", PrometheusTimeout("deadline"))
    telemetry = Telemetry(clock=lambda: 1000.0)
    prometheus = InstrumentedPrometheus(fake, telemetry)
    assert len(await prometheus.query("up")) == 2
    with pytest.raises(PrometheusTimeout):
        await prometheus.query("slow")
    text = scrape(telemetry)
    assert 'prom_autoscaler_adapter_prometheus_request_duration_seconds_count{call="query"} 2.0' in text
    assert 'prom_autoscaler_adapter_prometheus_request_errors_total{call="query",error="PrometheusTimeout"} 1.0' in text
    # newest sample is 5 s old: counted in the 5 s bucket, not the 1 s one
    assert 'prom_autoscaler_adapter_served_sample_age_seconds_bucket{le="1.0"} 0.0' in text
    assert 'prom_autoscaler_adapter_served_sample_age_seconds_bucket{le="5.0"} 1.0' in text


def test_state_is_read_at_scrape_time():
    size = {"custom": 3}
    telemetry = Telemetry()
    telemetry.add_state(StateSource(relist=lambda: {"last_duration_seconds": 0.25, "failures_total": 2.0,
                                                    "last_success_timestamp_seconds": None},
                                    registry=lambda: size, caches=lambda: {"pods": 7}))
    first = scrape(telemetry)
    size["custom"] = 4
    second = scrape(telemetry)
    assert "prom_autoscaler_adapter_relist_last_duration_seconds 0.25" in first
    assert "prom_autoscaler_adapter_relist_failures_total 2.0" in first
    assert "last_success_timestamp_seconds" not in first  # unknown yet: not exported as 0
    assert 'prom_autoscaler_adapter_watch_cache_objects{resource="pods"} 7.0' in first
    assert 'registry_size{kind="custom"} 3.0' in first and 'registry_size{kind="custom"} 4.0' in second


def test_each_app_has_its_own_registry():
    one, two = Telemetry(), Telemetry()
    one.observe_request(group="", version="", verb="get", code=200, seconds=0.01)
    assert "requests_total{" in scrape(one) and "requests_total{" not in scrape(two)
