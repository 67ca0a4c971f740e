"""The public reconcile cases check the product, not a copy of it: break the controller and they fail.

Each test patches one rule of `controller/` (deliberately: this is the one place product code is
replaced in a test) and replays the public file's `controller_reconcile` cases through the runner;
the cases that exercise that rule must FAIL. Unpatched, none fails.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controller.kube.status import WriteReason
from controller.reconcile import Reconciler
from controller.reconcile_state import PodClaims
from hack.conformance.controller_reconcile import reconcile
from hack.conformance.controller_runner import case_outcome
from tests import paths

RECONCILE = [c for c in json.loads((paths.VECTORS / "hpa-public.json").read_text())["cases"]
             if c["kind"] == "controller_reconcile"]  # fmt: skip


def _failed() -> set[str]:
    """The ids of the public reconcile cases that FAIL as the product stands now."""
    return {cid for verdict, cid, _ in (case_outcome(c, 0, set()) for c in RECONCILE) if verdict == "FAIL"}


def test_the_public_reconcile_cases_pass_on_the_product_as_it_is() -> None:
    assert RECONCILE and _failed() == set()


def test_a_status_write_rule_that_never_writes_fails_every_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every public case expects a status write (status_update=true)."""
    monkeypatch.setattr("controller.reconcile.plan_status_write", lambda *args, **kwargs: None)
    assert _failed() == {c["id"] for c in RECONCILE}


def _fed_back() -> dict[str, Any]:
    """ctl-tolerance-cm-external with the status its sync writes given back as the previous status
    (TestAvoidUnnecessaryUpdates): the status must be left alone."""
    case = copy.deepcopy(next(c for c in RECONCILE if c["id"] == "ctl-tolerance-cm-external"))
    first = reconcile(copy.deepcopy(case["inputs"]))
    case["inputs"]["hpa"]["status"] = {
        "currentReplicas": first["status_current_replicas"], "desiredReplicas": first["status_desired_replicas"],
        "lastScaleTime": None, "conditions": [{**c, "lastTransitionTime": 0} for c in first["conditions"]],
    }  # fmt: skip
    case["id"], case["expected"] = "fed-back", {"status_update": False}
    return case


def test_a_status_write_rule_that_always_writes_fails_a_fed_back_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """No public case expects the status left alone, so one is built from a public case."""
    case = _fed_back()
    assert case_outcome(case, 0, set()) == ("PASS", "fed-back", "")
    monkeypatch.setattr("controller.reconcile.plan_status_write", lambda *args, **kwargs: WriteReason.CHANGED)
    verdict, _, detail = case_outcome(case, 0, set())
    assert verdict == "FAIL" and "expected status_update=false got true" in detail


def test_pod_claims_that_ignore_which_pods_were_selected_fail_the_ambiguity_case(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A claim index that reports every other autoscaler of the namespace, whether or not it
    selects the same pods, makes ctl-condition-no-ambiguous-selector (another HPA selecting
    other pods) report AmbiguousSelector."""

    def claim_everyone(self: PodClaims, kind: str, namespace: str, name: str, pods: frozenset[str]) -> tuple[str, ...]:
        names: set[str] = vars(self).setdefault(f"mutant {kind} {namespace}", set())  # per index
        others = tuple(sorted(f"{namespace}/{other}" for other in names - {name}))
        names.add(name)
        return others

    monkeypatch.setattr(PodClaims, "claim", claim_everyone)
    assert _failed() == {"ctl-condition-no-ambiguous-selector"}


def test_pod_selection_without_the_missing_selector_check_fails_that_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Selecting with an empty selector (every pod) instead of reporting InvalidSelector."""
    original = Reconciler._select_pods

    def select_any(self: Reconciler, namespace: str, selector: str) -> Any:
        return original(self, namespace, selector or "name!=nothing-at-all")

    monkeypatch.setattr(Reconciler, "_select_pods", select_any)
    assert _failed() == {"ctl-condition-invalid-selector-missing"}
