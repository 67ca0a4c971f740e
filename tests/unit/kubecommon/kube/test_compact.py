"""compact / strip_metadata: equal JSON, shared strings, only the identity metadata kept."""

import orjson

from kubecommon.kube.compact import compact, strip_metadata

PAS = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
       "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7", "generation": 2,
                    "labels": {"team": "a"}, "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
       "spec": {"minReplicas": 1, "metrics": [{"type": "Pods"}], "periods": [3600]},
       "status": {"conditions": [{"type": "AbleToScale", "status": "True", "message": "x" * 200}]}}


def test_compact_is_equal_and_keeps_types():
    decoded = orjson.loads(orjson.dumps(PAS))
    out = compact(decoded)
    assert out == decoded
    assert isinstance(out["spec"]["metrics"], list) and isinstance(out["spec"]["periods"], list)


def test_compact_shares_short_strings_between_objects():
    one, two = (compact(orjson.loads(orjson.dumps(PAS))) for _ in range(2))
    assert one["status"]["conditions"][0]["status"] is two["status"]["conditions"][0]["status"]
    assert one["metadata"]["namespace"] is two["metadata"]["namespace"]
    long_one, long_two = (o["status"]["conditions"][0]["message"] for o in (one, two))
    assert long_one == long_two  # longer than INTERNED_CHARS: left alone


def test_strip_metadata_keeps_identity_spec_and_status():
    out = strip_metadata(orjson.loads(orjson.dumps(PAS)))
    assert out["metadata"] == {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                               "generation": 2}
    assert out["spec"] == PAS["spec"] and out["status"] == PAS["status"] and out["kind"] == PAS["kind"]
    assert strip_metadata(PAS, keep={"name", "labels"})["metadata"] == {"name": "web", "labels": {"team": "a"}}
