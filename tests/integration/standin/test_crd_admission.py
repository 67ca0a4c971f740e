"""Structural-schema admission of custom resources, through kubectl and the kubernetes package:
defaults applied, unknown fields pruned (or a 400 under fieldValidation=Strict), violations a
422 Invalid naming the field as kube-apiserver words it."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.integration.standin.crds import GROUP, PLURAL, gadget, gadget_crd

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def gadgets(kube_standin):
    kube_standin.apply(gadget_crd())
    kube_standin.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{GROUP}")
    return kube_standin


def _create(standin, namespace, body, **query):
    with standin.api_client() as api_client:
        api = client.CustomObjectsApi(api_client)
        return api.create_namespaced_custom_object(GROUP, "v1", namespace, PLURAL, body, **query)


def test_defaults_fill_missing_fields_and_unknown_fields_are_pruned(gadgets, standin_namespace):
    created = _create(gadgets, standin_namespace, gadget(
        "g", targetRef={"name": "web"}, maxReplicas=3, behavior={}, junk=True,
        extra={"free": {"form": 1}}))
    assert created["spec"] == {"targetRef": {"name": "web"}, "maxReplicas": 3,
                               "periodSeconds": 15, "mode": "Active", "behavior": {"window": 300},
                               "extra": {"free": {"form": 1}}}


def test_strict_field_validation_rejects_unknown_fields(gadgets, standin_namespace):
    body = gadget("g", targetRef={"name": "web"}, maxReplicas=3, junk=True)
    with pytest.raises(client.ApiException) as err:
        _create(gadgets, standin_namespace, body, field_validation="Strict")
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
        'unknown field "spec.junk"')


@pytest.mark.parametrize("spec, message", [
    pytest.param({"targetRef": {"name": "web"}}, "spec.maxReplicas: Required value",
                 id="required"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": "three"},
                 'spec.maxReplicas: Invalid value: "string": spec.maxReplicas in body must be of '
                 'type integer: "string"', id="type"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "mode": "Sometimes"},
                 'spec.mode: Unsupported value: "Sometimes": supported values: "Active", '
                 '"Preview"', id="enum"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "periodSeconds": 1},
                 "spec.periodSeconds: Invalid value: 1: spec.periodSeconds in body should be "
                 "greater than or equal to 3", id="minimum"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "periodSeconds": 4000},
                 "spec.periodSeconds: Invalid value: 4000: spec.periodSeconds in body should be "
                 "less than or equal to 3600", id="maximum"),
    pytest.param({"targetRef": {"name": ""}, "maxReplicas": 2},
                 'spec.targetRef.name: Invalid value: "": spec.targetRef.name in body should be '
                 "at least 1 chars long", id="min-length"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "replicas": 3},
                 'spec.replicas: Invalid value: "object": replicas must not exceed maxReplicas',
                 id="cel-rule-with-message-and-field-path"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "mode": "Preview",
                  "periodSeconds": 5},
                 "spec: Invalid value: \"object\": failed rule: self.mode != 'Preview' || "
                 "self.periodSeconds >= 10", id="cel-rule-default-message"),
    pytest.param({"targetRef": {"name": "web"}, "maxReplicas": 2, "mode": None},
                 None, id="null-is-dropped-then-defaulted"),
])
def test_schema_violations_are_422_naming_the_field(gadgets, standin_namespace, spec, message):
    body = gadget("g", **spec)
    if message is None:
        assert _create(gadgets, standin_namespace, body)["spec"]["mode"] == "Active"
        return
    with pytest.raises(client.ApiException) as err:
        _create(gadgets, standin_namespace, body)
    status = json.loads(err.value.body)
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == f'Gadget.{GROUP} "g" is invalid: {message}'
    field, _, text = message.partition(": ")
    assert status["details"]["causes"][0] == {
        "reason": status["details"]["causes"][0]["reason"], "field": field, "message": text}


def test_kubectl_apply_fails_naming_the_field(gadgets, standin_namespace):
    out = gadgets.kubectl("apply", "-n", standin_namespace, "-f", "-", check=False,
                          input=json.dumps(gadget("g", targetRef={"name": "web"})))
    assert out.returncode == 1
    assert 'The Gadget "g" is invalid: spec.maxReplicas: Required value' in out.stderr


def test_status_writes_are_validated_and_updates_keep_defaults(gadgets, standin_namespace):
    _create(gadgets, standin_namespace, gadget("g", targetRef={"name": "web"}, maxReplicas=3))
    with gadgets.api_client() as api_client:
        api = client.CustomObjectsApi(api_client)
        with pytest.raises(client.ApiException) as err:
            api.patch_namespaced_custom_object_status(
                GROUP, "v1", standin_namespace, PLURAL, "g",
                {"status": {"conditions": [{"type": "Ready"}]}})
        assert "status.conditions[0].status: Required value" in json.loads(err.value.body)["message"]
        patched = api.patch_namespaced_custom_object(
            GROUP, "v1", standin_namespace, PLURAL, "g", {"spec": {"mode": "Preview"}})
    assert (patched["spec"]["mode"], patched["spec"]["periodSeconds"]) == ("Preview", 15)
