"""The PromAutoscaler manifest the controller page (docs/controller.md) shows is one a newcomer can
apply as it stands: the CRD admits it unchanged (nothing defaulted away, nothing pruned, no
validation error) and the controller reads it with the values the comments promise."""

from __future__ import annotations

import re

import yaml

from controller.kube.objects import Mode, autoscaler_from_object
from hack.kube_standin import structural
from tests.paths import REPO

CRD_PATH = REPO / "charts/prom-autoscaler/crds/promautoscalers.yaml"


def _page_manifest() -> dict:  # type: ignore[type-arg]
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs/controller.md").read_text(), flags=re.S)
    (manifest,) = [b for b in blocks if "kind: PromAutoscaler" in b]
    loaded = yaml.safe_load(manifest)
    assert isinstance(loaded, dict)
    return loaded


def test_the_documented_manifest_is_admitted_unchanged_and_read_by_the_controller() -> None:
    manifest = _page_manifest()
    (version,) = yaml.safe_load(CRD_PATH.read_text())["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    structural.apply_defaults(manifest, schema)
    assert structural.prune(manifest, schema) == []
    assert structural.validate(manifest, schema) == []
    pas = autoscaler_from_object(manifest)
    assert (pas.spec.min_replicas, pas.spec.max_replicas, len(pas.spec.metrics)) == (2, 12, 2)
    assert (pas.mode, pas.paused, pas.sync_period_seconds) == (Mode.ACTIVE, False, 15)
    assert pas.spec.behavior is not None and pas.spec.prediction is not None
