"""The conflict guard: which autoscalers claim the same target."""

from __future__ import annotations

import pytest

from controller.conflicts import Claim, find_conflicts
from controller.kube.ports import ObjectKey, TargetRef

PAS, HPA = "PromAutoscaler", "HorizontalPodAutoscaler"


def claim(kind: str, ns: str, name: str, target: str, api: str = "apps/v1", tkind: str = "Deployment") -> Claim:
    return Claim(key=ObjectKey(kind=kind, namespace=ns, name=name),
                 target=TargetRef(api_version=api, kind=tkind, name=target))  # fmt: skip


CASES = [
    ("alone", [claim(PAS, "shop", "a", "web")], {}),
    ("other-names", [claim(PAS, "shop", "a", "web"), claim(HPA, "shop", "h", "api")], {}),
    ("other-namespace", [claim(PAS, "shop", "a", "web"), claim(HPA, "blog", "h", "web")], {}),
    ("other-kind", [claim(PAS, "shop", "a", "web"), claim(HPA, "shop", "h", "web", tkind="StatefulSet")], {}),
    ("other-group", [claim(PAS, "shop", "a", "web"), claim(HPA, "shop", "h", "web", api="example.com/v1")], {}),
    ("native-hpa", [claim(PAS, "shop", "a", "web"), claim(HPA, "shop", "h", "web")],
     {"a": "HorizontalPodAutoscaler shop/h", "h": "PromAutoscaler shop/a"}),
    ("version-ignored", [claim(PAS, "shop", "a", "web", api="apps/v1beta2"), claim(PAS, "shop", "b", "web")],
     {"a": "PromAutoscaler shop/b", "b": "PromAutoscaler shop/a"}),
    ("three", [claim(PAS, "shop", "a", "web"), claim(PAS, "shop", "b", "web"), claim(HPA, "shop", "h", "web")],
     {"a": "HorizontalPodAutoscaler shop/h, PromAutoscaler shop/b", "b": "HorizontalPodAutoscaler shop/h",
      "h": "PromAutoscaler shop/a, PromAutoscaler shop/b"}),
]


@pytest.mark.parametrize(("claims", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_conflicts(claims: list[Claim], expected: dict[str, str]) -> None:
    found = find_conflicts(claims)
    assert sorted(k.name for k in found) == sorted(expected)
    for key, message in found.items():
        assert expected[key.name] in message
        assert "Deployment" in message or "StatefulSet" in message
