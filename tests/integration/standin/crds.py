"""A small CustomResourceDefinition for the stand-in tests: `Gadget` (group `toys.example.com`,
short name `gd`), with the schema features admission and kubectl's workflows exercise: required
fields, an enum, bounds, defaults, a preserve-unknown-fields map, printer columns (a nested
jsonPath, an integer from status, a date for AGE) and the status and scale subresources."""

from __future__ import annotations

from typing import Any

GROUP = "toys.example.com"
KIND = "Gadget"
PLURAL = "gadgets"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What the gadget should do.",
            "required": ["targetRef", "maxReplicas"],
            "x-kubernetes-validations": [
                {"rule": "!has(self.replicas) || self.replicas <= self.maxReplicas",
                 "message": "replicas must not exceed maxReplicas", "fieldPath": ".replicas"},
                {"rule": "self.mode != 'Preview' || self.periodSeconds >= 10"}],
            "properties": {
                "targetRef": {"type": "object", "description": "The workload it drives.",
                              "required": ["name"],
                              "properties": {"kind": {"type": "string"},
                                             "name": {"type": "string", "minLength": 1}}},
                "maxReplicas": {"type": "integer", "format": "int32", "minimum": 1,
                                "description": "Upper bound on replicas."},
                "periodSeconds": {"type": "integer", "minimum": 3, "maximum": 3600,
                                  "default": 15},
                "mode": {"type": "string", "enum": ["Active", "Preview"], "default": "Active"},
                "replicas": {"type": "integer"},
                "behavior": {"type": "object", "description": "Scaling behaviour.",
                             "properties": {"window": {"type": "integer", "default": 300,
                                                       "description": "Seconds to look back."}}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "currentReplicas": {"type": "integer"},
                "selector": {"type": "string"},
                "conditions": {"type": "array", "items": {
                    "type": "object", "required": ["type", "status"],
                    "properties": {"type": {"type": "string"}, "status": {"type": "string"},
                                   "reason": {"type": "string"}, "message": {"type": "string"},
                                   "lastTransitionTime": {"type": "string",
                                                          "format": "date-time"}}}},
            },
        },
    },
}

COLUMNS: list[dict[str, Any]] = [
    {"name": "Target", "type": "string", "jsonPath": ".spec.targetRef.name"},
    {"name": "Max", "type": "integer", "jsonPath": ".spec.maxReplicas"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
    {"name": "Ready", "type": "string",
     "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def gadget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": PLURAL, "singular": "gadget", "kind": KIND,
                           "listKind": f"{KIND}List", "shortNames": ["gd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": SCHEMA},
                               "subresources": {"status": {}, "scale": {
                                   "specReplicasPath": ".spec.replicas",
                                   "statusReplicasPath": ".status.currentReplicas",
                                   "labelSelectorPath": ".status.selector"}},
                               "additionalPrinterColumns": COLUMNS}]},
    }


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": name},
            "spec": spec}
