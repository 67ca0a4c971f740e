"""Conformance runner for the controller: replays `hpa*.json` vector cases against
`controller.algorithm` and `controller.reconcile` (called by `python hack/conformance.py
controller FILE.json`).

Each case kind maps onto the pure function reproducing the upstream function it was taken from
(`controller_cases.py`); `controller_reconcile` cases replay one whole `reconcileAutoscaler()`
pass on the real `Reconciler` over the map-backed fakes (`controller_reconcile.py`). Vector
conventions (the file's `conventions` block): instants are seconds relative to now=0, "zero" is
Go's zero time, windows are strict.

Output (the shared case loop, hack/conformance/runner.py): `PASS id`, `FAIL id: expected ... got
...`, `SKIP id: reason`; then `N passed, N failed, N skipped`; exit 1 if anything failed. Nothing
passes silently: a case without a string id, an unknown case kind, an input field this runner does
not honour (`controller_schema.py`), an expected field its kind is not observed as
(`controller_schema.EXPECTED`), a malformed case or a crash while replaying it is a FAIL with the
reason; an unreadable file is one FAIL. SKIP is used only for
the controller's rows of the deviations table (hack/conformance/deviations.py), when the
deviation's normaliser reproduces upstream's answer.

Non-goals: the case loop and its output (runner), the replay itself (controller_cases,
controller_reconcile).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.algorithm.errors import MetricError
from hack.conformance.controller_cases import GO_ZERO_TIME, HANDLERS, CaseError, Json, t
from hack.conformance.controller_reconcile import reconcile
from hack.conformance.adapter_compare import PROVENANCE_FIELDS
from hack.conformance.controller_schema import (
    ERROR_FIELDS,
    EXPECTED,
    undeclared_expected,
    unknown_case_keys,
    unknown_fields,
)
from hack.conformance.deviations import excusing
from hack.conformance.runner import Verdict, case_label, run_cases, unreadable

HANDLERS_BY_KIND = {**HANDLERS, "controller_reconcile": reconcile}


def _normal(key: str, value: Any) -> Any:
    if key == "timestamp":
        return GO_ZERO_TIME if value in (None, "zero") else t(value)
    if key.endswith("_pods") and isinstance(value, list):
        return sorted(value)
    return value


def _project(want: Any, got: Any) -> Any:
    """Compare lists of objects on the fields the vector states (e.g. conditions as
    `{type, status, reason}` without messages, events without messages); everything else must
    match as a whole. Lists of different lengths are projected on every field the vector states,
    so the mismatch shows what we hold in the vector's terms."""
    if (isinstance(want, list) and isinstance(got, list) and all(isinstance(w, dict) for w in want)
            and all(isinstance(g, dict) for g in got)):  # fmt: skip
        if len(want) == len(got):
            return [{k: g.get(k) for k in w} for w, g in zip(want, got, strict=True)]
        stated = {k for w in want for k in w}
        return [{k: v for k, v in g.items() if k in stated} for g in got]
    return got


def _malformed(case: Any) -> str | None:
    """Why a case cannot be replayed at all (None if it is well formed)."""
    if not isinstance(case, dict):
        return f"a case object got {type(case).__name__}"
    extra = unknown_case_keys(case)
    if extra:
        return f"known case keys got unknown key(s) {extra}"
    kind = case.get("kind")
    if not isinstance(kind, str) or kind not in HANDLERS_BY_KIND:
        return f"a known case kind ({', '.join(sorted(HANDLERS_BY_KIND))}) got {kind!r}"
    if not isinstance(case.get("inputs"), dict) or not isinstance(case.get("expected"), dict):
        return "inputs and expected objects got " + json.dumps({k: type(case.get(k)).__name__
                                                                 for k in ("inputs", "expected")})  # fmt: skip
    if not case["expected"]:
        return "at least one expected field got none (a case that asserts nothing cannot pass)"
    fields = unknown_fields(kind, case["inputs"])
    if fields:
        return f"input fields this runner honours got unknown field(s) {fields}"
    undeclared = undeclared_expected(kind, case["expected"])
    if undeclared:  # a field this kind's answer does not carry: never ignored
        return (f"the fields a {kind!r} answer is observed as ({', '.join(EXPECTED[kind])}) got "
                f"{', '.join(undeclared)}: a {kind!r} answer has no such field (FIELDS.md)")
    return None


def _compare_error(expected: Json, error: str) -> list[str]:
    stated = [key for key in ERROR_FIELDS if key in expected]
    if not stated:
        return [f"expected {json.dumps(expected)} got error {error}"]
    problems = [f"expected {key} {str(expected[key])!r} got error {error!r}" for key in stated
                if not str(expected[key]) or str(expected[key]) not in error]
    others = sorted(set(expected) - set(ERROR_FIELDS))
    if others:  # an answer that is an error has no other fields
        problems.append(f"expected {', '.join(others)} got error {error!r} (no answer)")
    return problems


class _Failed(Exception):
    """The replay's answer was an error (a MetricError's message), as the vector's `error` states."""


def answer(case: Json) -> Json | _Failed:
    """What our code answers for a well-formed case (see `_malformed`): its fields, or the error."""
    try:
        return HANDLERS_BY_KIND[case["kind"]](case["inputs"])
    except MetricError as e:
        return _Failed(str(e))


def mismatches(expected: Json, got: Json | _Failed) -> list[str]:
    """How `got` differs from `expected` (empty: it meets it); provenance fields are not compared."""
    expected = {k: v for k, v in expected.items() if k not in PROVENANCE_FIELDS}
    if isinstance(got, _Failed):
        return _compare_error(expected, str(got))
    if isinstance(got.get("error"), str) and any(key in expected for key in ERROR_FIELDS):
        # a sync that returned an error (controller_reconcile): its message, with the other fields
        return [*_compare_error({k: v for k, v in expected.items() if k in ERROR_FIELDS}, got["error"]),
                *mismatches({k: v for k, v in expected.items() if k not in ERROR_FIELDS}, got)]
    stated = [key for key in ERROR_FIELDS if key in expected]
    if stated:
        return [f"expected {stated[0]} {expected[stated[0]]!r} got {json.dumps(got, default=str)}"]
    problems = []
    for key, want in expected.items():
        if key not in got:
            problems.append(f"expected {key}={json.dumps(want)} got no {key} from this call")
        elif _normal(key, want) != _normal(key, _project(want, got[key])):
            problems.append(f"expected {key}={json.dumps(want)} got {json.dumps(got[key], default=str)}")
    return problems


def check(case: Json) -> list[str]:
    """Mismatches for one case (empty: pass). The case must be well formed (see `_malformed`)."""
    return mismatches(case["expected"], answer(case))


def _judged(case: Json) -> tuple[Verdict, str]:
    """The verdict on a well-formed case: PASS, a deviation's SKIP, or FAIL with the mismatches."""
    got = answer(case)
    problems = mismatches(case["expected"], got)
    if not problems:
        return "PASS", ""
    deviation = excusing("controller", case, got, lambda normalised: not mismatches(case["expected"], normalised))
    if deviation is not None:
        return "SKIP", f"deviation {deviation.name}: {deviation.reason}"
    return "FAIL", "; ".join(problems)


def case_outcome(case: Any, index: int, seen: set[str]) -> tuple[Verdict, str, str]:
    """(verdict, case name, detail) for one case; never raises."""
    label = case_label(case, index)
    cid = case.get("id") if isinstance(case, dict) else None
    if not isinstance(cid, str) or not cid:
        return "FAIL", label, f"expected a non-empty string id got {cid!r}"
    if cid in seen:
        return "FAIL", cid, "expected a unique case id got a duplicate"
    seen.add(cid)
    try:
        why = _malformed(case)
        if why is not None:
            return "FAIL", cid, f"expected {why}"
        verdict, detail = _judged(case)
    except CaseError as e:
        verdict, detail = "FAIL", f"expected a case this runner can replay got {e}"
    except Exception as e:  # a crash fails that case, not the whole run
        verdict, detail = "FAIL", f"expected {json.dumps(case['expected'], default=str)} got {type(e).__name__}: {e}"
    return verdict, cid, detail


def _load(path: Path) -> tuple[list[Any] | None, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"expected a readable JSON case file got {type(e).__name__}: {e}"
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list):
        return None, "expected an object with a 'cases' list got " + type(cases).__name__
    return cases, ""


def run(path: Path) -> int:
    """Run the controller case file at `path`: one line per case, then the counts; 1 if any failed."""
    cases, problem = _load(path)
    if cases is None:
        return unreadable(path, problem)
    seen: set[str] = set()

    def judge(case: object, index: int) -> tuple[Verdict, str]:
        verdict, _, detail = case_outcome(case, index, seen)
        return verdict, detail

    return run_cases(cases, judge)
