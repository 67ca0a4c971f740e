"""Our own case files (hack/conformance/cases/) cover the (family, field) pairs the public vector
files never exercise, so the checkers themselves are tested: every case passes as written (or is
excused by a listed deviation), and the same case with any one stated value changed FAILs, so a
field the runner claimed to check but ignored would be caught."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from hack.conformance import adapter_runner, controller_runner, controller_schema
from hack.conformance.adapter_observed import OBSERVED
from tests import paths

CASES_DIR = paths.REPO / "hack" / "conformance" / "cases"
ADAPTER = json.loads((CASES_DIR / "prometheus-adapter-own.json").read_text())["cases"]
CONTROLLER = json.loads((CASES_DIR / "hpa-own.json").read_text())["cases"]


def _changed(value: Any) -> Any:
    """A different value of the same shape."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "-changed"
    if isinstance(value, list):
        return [*value, value[-1]] if value else ["extra"]
    if isinstance(value, dict):
        key = next(iter(value))
        return {**value, key: _changed(value[key])}
    raise AssertionError(f"no change for {value!r}")


def _mutations(cases: list[dict[str, Any]]) -> list[Any]:
    out = []
    for case in cases:
        for key, value in case["expected"].items():
            if value is None:
                continue
            mutated = copy.deepcopy(case)
            mutated["expected"][key] = _changed(value)
            out.append(pytest.param(mutated, id=f"{case['id']}:{key}"))
    return out


def _adapter_fixtures() -> dict[str, Any]:
    from hack.conformance import adapter_files

    fixtures, cases = adapter_files.companions(CASES_DIR / "prometheus-adapter-own.json")
    return {**fixtures, "__cases__": cases}


FIXTURES = _adapter_fixtures()


def _adapter_verdict(case: dict[str, Any]) -> tuple[str, str]:
    return adapter_runner.judge_case(case, FIXTURES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in ADAPTER])
def test_every_own_adapter_case_passes_or_is_excused_by_a_deviation(case: dict[str, Any]) -> None:
    verdict, detail = _adapter_verdict(case)
    assert verdict == "PASS" or (verdict == "SKIP" and detail.startswith("deviation ")), detail
    assert "does not check" not in detail


@pytest.mark.parametrize("case", _mutations(ADAPTER))
def test_an_own_adapter_case_with_one_value_changed_fails(case: dict[str, Any]) -> None:
    verdict, detail = _adapter_verdict(case)
    assert verdict == "FAIL", detail
    assert "does not check" not in detail


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CONTROLLER])
def test_every_own_controller_case_passes(case: dict[str, Any]) -> None:
    verdict, _, detail = controller_runner.case_outcome(case, 0, set())
    assert verdict == "PASS", detail


@pytest.mark.parametrize("case", _mutations(CONTROLLER))
def test_an_own_controller_case_with_one_value_changed_fails(case: dict[str, Any]) -> None:
    verdict, _, detail = controller_runner.case_outcome(case, 0, set())
    assert verdict == "FAIL", detail
    assert "cannot check" not in detail


def _vocabulary() -> tuple[list[str], list[str]]:
    """FIELDS.md's adapter categories and expected fields, read from the page itself (the
    backticked names of its `## Categories` and `## Expected fields` sections)."""
    text = (paths.VECTORS / "FIELDS.md").read_text().split("# Case-file vocabulary (HPA cases")[0]

    def section(name: str) -> str:
        return text.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]

    categories = re.findall(r"`([^`]+)`", section("Categories"))
    # a field's explanation in parentheses may name other things (`value`, `{name, namespaced}`)
    fields = re.findall(r"`([a-z_]+)`", re.sub(r"\([^()]*\)", "", section("Expected fields")))
    return categories, fields


CATEGORIES, FIELDS = _vocabulary()
PROVENANCE = ("asserted_by_test", "from_code_not_tested")
OWN_PAIRS = {(c["category"], k) for c in ADAPTER for k, v in c["expected"].items() if v is not None}
UNDECLARED = [(family, field) for family in CATEGORIES for field in FIELDS
              if field not in PROVENANCE and field not in OBSERVED[family]]


def test_the_vocabulary_is_read_from_fields_md_and_every_family_declares_its_fields() -> None:
    assert len(CATEGORIES) == 28 and len(FIELDS) > 50 and set(PROVENANCE) <= set(FIELDS)
    assert set(CATEGORIES) == set(OBSERVED) == set(adapter_runner.CHECKERS)


def test_every_field_a_family_declares_is_stated_by_an_own_case() -> None:
    declared = {(family, field) for family, fields in OBSERVED.items() for field in fields}
    assert sorted(declared - OWN_PAIRS) == []


@pytest.mark.parametrize(("family", "field"), UNDECLARED, ids=[f"{f}:{k}" for f, k in UNDECLARED])
def test_a_field_its_family_does_not_declare_fails_naming_it(family: str, field: str) -> None:
    case = {"id": "generated", "category": family, "input": {}, "expected": {field: 1}}
    verdict, detail = _adapter_verdict(case)
    assert verdict == "FAIL" and f"expected {field}: a {family!r} answer has no such field" in detail, detail


@pytest.mark.parametrize("family", CATEGORIES)
def test_provenance_fields_are_accepted_in_every_family_and_never_compared(family: str) -> None:
    case = copy.deepcopy(next(c for c in ADAPTER if c["category"] == family))
    before = _adapter_verdict(case)
    case["expected"].update(asserted_by_test="TestNothing-changed", from_code_not_tested={"--x": 3})
    assert _adapter_verdict(case) == before


HPA_PUBLIC = json.loads((paths.VECTORS / "hpa-public.json").read_text())["cases"]
HPA_FIELDS = sorted({f for fields in controller_schema.EXPECTED.values() for f in fields}
                    | {k for c in HPA_PUBLIC for k in c["expected"]} | {"error_contains", "events", "conditions"})
HPA_UNDECLARED = [(kind, field) for kind in controller_schema.EXPECTED for field in HPA_FIELDS
                  if field not in controller_schema.EXPECTED[kind]]


def test_every_field_a_controller_kind_declares_is_stated_by_a_public_or_own_case() -> None:
    stated = {(c["kind"], k) for c in (*HPA_PUBLIC, *CONTROLLER) for k, v in c["expected"].items() if v is not None}
    declared = {(kind, field) for kind, fields in controller_schema.EXPECTED.items() for field in fields}
    assert sorted(declared - stated) == []
    assert set(controller_schema.EXPECTED) == set(controller_runner.HANDLERS_BY_KIND)
    # FIELDS.md's additions: error_contains in every kind whose call can fail, events and conditions
    # (with and without a message) in controller_reconcile, each stated by an own case
    own = {(c["kind"], k) for c in CONTROLLER for k in c["expected"]}
    assert {(kind, "error_contains") for kind in ("replica_calculator", "calculate_requests",
                                                 "controller_reconcile")} <= own
    assert {("controller_reconcile", "events"), ("controller_reconcile", "conditions")} <= own
    messages = {"message" in cond for c in CONTROLLER for cond in c["expected"].get("conditions", [])}
    assert messages == {True, False}


@pytest.mark.parametrize(("kind", "field"), HPA_UNDECLARED, ids=[f"{k}:{f}" for k, f in HPA_UNDECLARED])
def test_a_field_its_controller_kind_does_not_declare_fails_naming_it(kind: str, field: str) -> None:
    case = {"id": "generated", "kind": kind, "inputs": {}, "expected": {field: 1}}
    verdict, _, detail = controller_runner.case_outcome(case, 0, set())
    assert verdict == "FAIL" and f"{field}: a {kind!r} answer has no such field" in detail, detail


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CONTROLLER[:3]])
def test_provenance_fields_are_accepted_in_controller_cases_and_never_compared(case: dict[str, Any]) -> None:
    case = copy.deepcopy(case)
    case["expected"].update(asserted_by_test="TestNothing-changed", from_code_not_tested=3)
    assert controller_runner.case_outcome(case, 0, set())[0] == "PASS"


def test_a_controller_error_answer_meets_error_contains_and_fails_a_field_it_lacks() -> None:
    case = next(c for c in CONTROLLER if c["kind"] == "calculate_requests")
    with_other = copy.deepcopy(case)
    with_other["expected"]["requests_milli"] = 5
    verdict, _, detail = controller_runner.case_outcome(with_other, 0, set())
    assert (verdict, "no answer" in detail) == ("FAIL", True), detail


def test_both_own_case_files_are_found() -> None:
    assert sorted(p.name for p in CASES_DIR.glob("*.json")) == ["hpa-own.json", "prometheus-adapter-own.json"]


def test_a_vocabulary_field_a_family_answer_does_not_carry_fails_naming_what_it_has() -> None:
    case = copy.deepcopy(next(c for c in ADAPTER if c["category"] == "naming"))
    case["expected"]["pod_metrics"] = []
    verdict, detail = _adapter_verdict(case)
    assert verdict == "FAIL"
    assert "expected pod_metrics: a 'naming' answer has no such field" in detail and "metric_name" in detail


def test_a_field_outside_the_vocabulary_fails_loudly() -> None:
    case = copy.deepcopy(ADAPTER[0])
    case["expected"]["latency_ms"] = 3
    verdict, detail = _adapter_verdict(case)
    assert (verdict, "unknown expected field latency_ms" in detail) == ("FAIL", True), detail
    ctl = copy.deepcopy(CONTROLLER[0])
    ctl["expected"]["latency_ms"] = 3
    verdict, _, detail = controller_runner.case_outcome(ctl, 0, set())
    assert verdict == "FAIL" and "latency_ms" in detail, detail


@pytest.mark.parametrize("case_id", ["own.e2e.custom_values", "own.e2e.external_unknown"])
@pytest.mark.parametrize("field", ["pod_metrics", "node_metrics"])
def test_an_e2e_case_stating_a_field_its_answer_does_not_carry_fails(case_id: str, field: str) -> None:
    """e2e observes pod_metrics and node_metrics (metrics.k8s.io requests); a custom or external
    request's answer has neither, so stating one is a mismatch, never left uncompared."""
    case = copy.deepcopy(next(c for c in ADAPTER if c["id"] == case_id))
    assert _adapter_verdict(case)[0] == "PASS"
    case["expected"][field] = []
    assert _adapter_verdict(case)[0] == "FAIL"


@pytest.mark.parametrize("case_id", ["own.request_to_promql.resolved_request", "own.external.request.selector_found"])
def test_a_request_is_resolved_by_the_adapters_own_path_parser(case_id: str) -> None:
    """A path the adapter's handler refuses (one segment short) is refused the same way here,
    with its message, never resolved by a parser of the runner's own."""
    case = copy.deepcopy(next(c for c in ADAPTER if c["id"] == case_id))
    case["input"]["http"] = case["input"]["http"].split("?")[0].rsplit("/", 1)[0]
    case["expected"] = {"success": False, "error": "the server could not find the requested resource"
                        if "external" in case_id else "invalid request path"}
    assert _adapter_verdict(case) == ("PASS", "")
