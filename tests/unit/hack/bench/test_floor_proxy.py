"""The benchmark's minimal transforming proxy does the adapter's transformation, not less: for the
same Prometheus answer its MetricValueList has the adapter's items (names, values, time), so the
latency it adds is a fair floor for the adapter's own."""

from __future__ import annotations

import json

import orjson

from adapter.server.render_metrics import encode_custom
from adapter.services.results import MetricValue, MetricValueList
from hack.bench.floor_proxy import metric_value_list
from kubecommon.selectors import Selector

T = 1764106000.123


def test_the_minimal_transformation_yields_the_adapters_items() -> None:
    texts = ["0.9999934665344787", "2", "1.5", "0"]
    answer = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"namespace": "shop", "pod": f"web-{i}"}, "value": [T, text]} for i, text in enumerate(texts)]}})
    served = MetricValueList(kind="Pod", api_version="v1", namespace="shop", metric="http_requests_per_second",
                             selector=Selector.empty(),
                             items=tuple(MetricValue(name=f"web-{i}", timestamp=T, milli=int(float(text) * 1000))
                                         for i, text in enumerate(texts)))
    adapter = json.loads(encode_custom(served, "v1beta1"))
    minimal = json.loads(metric_value_list(answer))

    def essentials(document: dict) -> list[tuple[str, str, str, str]]:
        return [(i["describedObject"]["namespace"], i["describedObject"]["name"], i["timestamp"], i["value"])
                for i in document["items"]]

    assert essentials(minimal) == essentials(adapter)
    assert [i["value"] for i in minimal["items"]] == ["999m", "2", "1500m", "0"]
    assert minimal["kind"] == adapter["kind"] == "MetricValueList"
