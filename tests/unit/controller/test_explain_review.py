"""`explain` as a platform engineer previewing an HPA reads it: the controller's document carries
every metric the decision used (not the status copy's 4 KiB cut), the HPA's own desiredReplicas
sits next to ours with the difference named, and a sync that could not decide says so instead of
printing `3 -> 3` as if it had decided to stay."""

from __future__ import annotations

from typing import Any

import pytest

from controller.algorithm.spec import FetchFailure
from controller.explain import main, no_decision_message, render, status_document
from controller.preview import decision_document

from .world import World, external, pas_json


def _hpa(*, hpa_desired: int, metrics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    hpa = pas_json(metrics=metrics)
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", "HorizontalPodAutoscaler"
    hpa["status"] = {"currentReplicas": 3, "desiredReplicas": hpa_desired}
    return hpa


async def _document(w: World) -> dict[str, Any]:
    out = await w.sync()
    assert out.report is not None
    return decision_document(out.report)


async def test_the_controllers_document_has_every_metric_the_decision_used() -> None:
    w = World(obj_json=_hpa(hpa_desired=6, metrics=[external(f"queue_messages_ready_for_group_{i}")
                                                    for i in range(20)]))
    for i in range(20):
        w.observe(10_000 * (i + 1), index=i)
    doc = await _document(w)
    assert len(doc["lastDecision"]["metrics"]) == 20 and "truncated" not in doc["lastDecision"]
    text = render(doc, title="HorizontalPodAutoscaler shop/web")
    assert "queue_messages_ready_for_group_19" in text, "the metric that set the count is shown"
    assert "Note: showing" not in text


@pytest.mark.parametrize(
    ("load", "hpa_desired", "expected"),
    [(30_000, 3, "HorizontalPodAutoscaler's own status.desiredReplicas: 3 (agrees)"),
     (80_000, 3, "HorizontalPodAutoscaler's own status.desiredReplicas: 3 (we want 6: 3 more)"),
     (30_000, 5, "HorizontalPodAutoscaler's own status.desiredReplicas: 5 (we want 3: 2 fewer)")],
    ids=["agree", "we-want-more", "we-want-fewer"],
)
async def test_a_previewed_hpa_shows_its_own_count_next_to_ours(load: int, hpa_desired: int, expected: str) -> None:
    w = World(obj_json=_hpa(hpa_desired=hpa_desired))
    w.observe(load)
    text = render(await _document(w), title="HorizontalPodAutoscaler shop/web")
    assert expected in text, text


async def test_a_sync_that_could_not_read_its_metrics_says_it_decided_nothing() -> None:
    w = World(obj_json=_hpa(hpa_desired=5))
    w.answer(FetchFailure(message="no series for queue"))
    doc = await _document(w)
    text = render(doc, title="HorizontalPodAutoscaler shop/web")
    assert "3 -> 3" not in text, text
    assert "Outcome: blocked by metric errors: no replica count decided; the target stays at 3" in text, text
    assert "no series for queue" in text
    assert "HorizontalPodAutoscaler's own status.desiredReplicas: 5 (we decided no count to compare)" in text, text


@pytest.mark.parametrize(
    ("status", "expected"),
    [({}, "no controller has synced it"),
     ({"conditions": [{"type": "AbleToScale", "status": "False", "reason": "InvalidSpec", "message": "x"},
                      {"type": "ScalingActive", "status": "False", "reason": "InvalidSpec",
                       "message": "spec.maxReplicas: Required value"}]},
      "nothing was decided: ScalingActive=False InvalidSpec: spec.maxReplicas: Required value")],
    ids=["never-synced", "invalid-spec"],
)
def test_a_promautoscaler_without_a_decision_says_why(status: dict[str, Any], expected: str) -> None:
    assert expected in no_decision_message("shop", "web", status)


@pytest.mark.parametrize("mode", ["Active", "Preview"])
async def test_a_promautoscaler_held_by_a_conflicting_hpa_is_explained_as_not_applied(mode: str) -> None:
    w = World(obj_json=pas_json(extra={"mode": mode}))
    w.observe(80_000)
    out = await w.sync(conflict="HorizontalPodAutoscaler shop/web also targets Deployment/web")
    assert out.report is not None
    for doc in (status_document(w.obj_json["status"]), decision_document(out.report)):
        text = render(doc, title="PromAutoscaler shop/web")
        assert "Not applied: another autoscaler targets the same workload (HorizontalPodAutoscaler shop/web " \
               "also targets Deployment/web); /scale was left alone" in text, text


@pytest.mark.parametrize("url", ["localhost:8080", "127.0.0.1:8080", "https://", "ftp://127.0.0.1:8080"],
                         ids=["no-scheme", "ip-no-scheme", "no-host", "other-scheme"])
def test_a_controller_url_that_is_not_an_http_url_is_a_usage_error(url: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--hpa", "shop/web", f"--controller-url={url}"])
    assert exited.value.code == 2
    assert "--controller-url must be an http(s) URL with a host, e.g. https://127.0.0.1:8080" in capsys.readouterr().err


def test_a_controller_nobody_listens_for_says_what_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--hpa", "shop/web", "--controller-url=https://127.0.0.1:1", "--token=t"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect to https://127.0.0.1:1" in err and "port-forward" in err, err
    assert "SSLContext object" not in err, err
