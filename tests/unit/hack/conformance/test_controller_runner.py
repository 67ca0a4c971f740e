"""The controller conformance runner's contract on case files it has never seen.

CI may run hidden case files of the public format. The runner must replay every kind the format
has, and must never pass a case it cannot check: an unknown kind, input field, expected field or a
malformed case is a FAIL with the reason, a crash fails only that case, an unreadable file is one
FAIL. Output: `PASS id` / `FAIL id: expected ... got ...` / `SKIP id: reason`, last line
`N passed, N failed, N skipped`, exit status 1 on any failure.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hack.conformance.controller_reconcile import reconcile
from hack.conformance.controller_runner import case_outcome, run
from tests import paths

PUBLIC = json.loads((paths.VECTORS / "hpa-public.json").read_text())["cases"]
SCALE_UP = next(c for c in PUBLIC if c["id"] == "rc-scale-up-container")
RECONCILE = next(c for c in PUBLIC if c["id"] == "ctl-scale-up")
LINE = re.compile(r"(PASS \S+|FAIL \S+: expected .+ got .+|SKIP \S+: .+)")


def _replay(tmp_path: Path, capsys: pytest.CaptureFixture[str], cases: Any) -> tuple[int, list[str]]:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": cases}))
    code = run(path)
    return code, capsys.readouterr().out.strip().splitlines()


def _mutated(base: dict[str, Any], cid: str, change: Any) -> dict[str, Any]:
    case = copy.deepcopy(base)
    case["id"] = cid
    change(case)
    return case


def _set(path: str, value: Any) -> Any:
    def apply(case: dict[str, Any]) -> None:
        node = case
        *parents, last = path.split(".")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return apply


@pytest.mark.parametrize(
    ("base", "change", "reason"),
    [
        pytest.param(SCALE_UP, _set("kind", "mystery"), "known case kind", id="unknown kind"),
        pytest.param(SCALE_UP, _set("inputs.pods.0.sidecar", True), "unknown field(s) ['pods[].sidecar']",
                     id="unknown input field"),
        pytest.param(RECONCILE, _set("inputs.hpa.behavior", {"scaleUp": {"selectPolicy": "Min"}}),
                     "hpa.behavior.scaleUp.selectPolicy", id="behavior key spelled another way"),
        pytest.param(RECONCILE, _set("inputs.feature_gates.SomeFutureGate", True), "SomeFutureGate",
                     id="unknown feature gate"),
        pytest.param(RECONCILE, _set("inputs.failures.pods_list_error", True), "pods_list_error",
                     id="unknown injected failure"),
        pytest.param(SCALE_UP, _set("inputs.function", "GetFancyReplicas"), "GetFancyReplicas",
                     id="unknown calculator function"),
        pytest.param(SCALE_UP, _set("expected.trace_steps", 3), "trace_steps: a 'replica_calculator' answer has no such",
                     id="expected field the runner cannot check"),
        pytest.param(SCALE_UP, _set("expected", {}), "asserts nothing", id="empty expected"),
        pytest.param(SCALE_UP, _set("skip", True), "unknown key(s) ['skip']", id="unknown case key"),
        pytest.param(SCALE_UP, _set("inputs.current_replicas", "three"), "ValueError", id="crash in one case"),
        pytest.param(SCALE_UP, _set("expected.error", "no pods"), "expected error 'no pods' got",
                     id="an expected error that does not happen"),
    ],
)  # fmt: skip
def test_a_case_the_runner_cannot_check_fails_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: dict[str, Any], change: Any, reason: str
) -> None:
    code, lines = _replay(tmp_path, capsys, [_mutated(base, "bad", change), copy.deepcopy(RECONCILE)])
    assert code == 1
    assert lines[0].startswith("FAIL bad: expected ") and " got " in lines[0] and reason in lines[0], lines[0]
    assert lines[1] == f"PASS {RECONCILE['id']}"  # the next case still runs
    assert lines[-1] == "1 passed, 1 failed, 0 skipped"


def test_every_line_follows_the_contract_and_the_summary_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [*copy.deepcopy(PUBLIC[:5]), 7, {"kind": "group_pods"}, copy.deepcopy(PUBLIC[0])]
    code, lines = _replay(tmp_path, capsys, cases)
    assert code == 1
    assert all(LINE.fullmatch(line) for line in lines[:-1]), lines
    assert lines[5] == "FAIL cases[5]: expected a non-empty string id got None"
    assert lines[7] == f"FAIL {PUBLIC[0]['id']}: expected a unique case id got a duplicate"
    assert lines[-1] == "5 passed, 3 failed, 0 skipped"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("{", "JSONDecodeError", id="not JSON"),
        pytest.param('{"tests": []}', "'cases' list", id="no cases list"),
        pytest.param("[]", "'cases' list", id="not an object"),
    ],
)
def test_an_unreadable_file_is_one_failure_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    path = tmp_path / "hpa_cases.json"
    path.write_text(text)
    assert run(path) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("FAIL hpa_cases.json: expected ") and reason in lines[0]
    assert lines[-1] == "0 passed, 1 failed, 0 skipped"


def test_external_values_saturate_at_maxint64_as_upstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TestReplicaCalcExternalMetricUsageOverflow: two values whose sum wraps int64 are capped at
    MaxInt64; with a MaxInt64 target the ratio is 1, so the count stays at 3."""
    half = (2**63 - 1) // 2 + 1
    case = {
        "id": "external-usage-overflow", "kind": "replica_calculator",
        "inputs": {"function": "GetExternalMetricReplicas", "metric_source": "External", "current_replicas": 3,
                   "target": {"type": "Value", "value_milli": 2**63 - 1}, "external_metric_values_milli": [half, half],
                   "pods": [{"name": f"test-pod-{i}", "phase": "Running", "ready_condition": "True"} for i in range(3)]},
        "expected": {"replicas": 3, "usage_milli": 2**63 - 1, "timestamp": "zero"},
    }  # fmt: skip
    code, lines = _replay(tmp_path, capsys, [case])
    assert lines == ["PASS external-usage-overflow", "1 passed, 0 failed, 0 skipped"] and code == 0


def test_restartable_init_containers_count_and_plain_init_containers_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TestCalculateRequests "pod with restartable init containers": 100 + sidecar 50 = 150."""
    case = {
        "id": "cr-restartable-init", "kind": "calculate_requests",
        "inputs": {"resource": "cpu", "container": "", "feature_gates": {"PodLevelResources": False}, "pods": [{
            "name": "test-pod", "containers": [{"name": "container1", "cpu_request_milli": 100}],
            "init_containers": [{"name": "init-container1", "cpu_request_milli": 20},
                                {"name": "restartable-container1", "restart_policy": "Always", "cpu_request_milli": 50}],
        }]},
        "expected": {"requests_milli": {"test-pod": 150}},
    }  # fmt: skip
    void = {"id": "cr-void", "kind": "calculate_requests", "inputs": {"resource": "cpu", "container": "", "pods": []},
            "expected": {"requests_milli": {}}}  # fmt: skip
    camel = copy.deepcopy(case)
    camel["id"] = "cr-restartable-init-camel"
    pod = camel["inputs"]["pods"][0]
    pod["initContainers"] = pod.pop("init_containers")
    pod["initContainers"][1] = {"name": "restartable-container1", "restartPolicy": "Always", "cpu_request_milli": 50}
    code, lines = _replay(tmp_path, capsys, [case, void, camel])
    assert lines == ["PASS cr-restartable-init", "PASS cr-void", "PASS cr-restartable-init-camel",
                     "3 passed, 0 failed, 0 skipped"] and code == 0  # fmt: skip


@pytest.mark.parametrize(
    ("selector", "printed"),
    [
        pytest.param({}, "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}",
                     id="empty selector"),
        pytest.param({"matchLabels": {"b": "2", "a": "1"}},
                     "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{},}",
                     id="labels sorted, each followed by a comma"),
        pytest.param({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]},
                     "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement"
                     "{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}", id="match expressions"),
    ],
)  # fmt: skip
def test_external_metric_names_print_the_selector_as_upstream(selector: dict, printed: str) -> None:
    """The condition message names the metric as upstream's `external metric %s(%+v)`."""
    case = copy.deepcopy(next(c for c in PUBLIC if c["id"] == "ctl-tolerance-cm-external"))
    case["inputs"]["hpa"]["metrics"][0]["external"]["metric"]["selector"] = selector
    active = reconcile(case["inputs"])["conditions"][1]
    assert active["message"] == f"the HPA was able to successfully calculate a replica count from external metric qps({printed})"


def test_a_failed_status_write_is_an_error_and_a_warning_event() -> None:
    """updateStatus: on failure a FailedUpdateStatus Warning, and reconcile returns the error."""
    inputs = copy.deepcopy(RECONCILE["inputs"])
    inputs["failures"] = {"status_update_error": True}
    got = reconcile(inputs)
    assert got["reconcile_returns_error"] is True and got["scale_updated_to"] == 5
    assert got["event_reasons"] == ["SuccessfulRescale", "FailedUpdateStatus"]
    assert reconcile(copy.deepcopy(RECONCILE["inputs"]))["reconcile_returns_error"] is False


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _paths_of(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths_of(v, (*prefix, i))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_input_makes_the_runner_crash_or_pass_by_accident(data: st.DataObject) -> None:
    """Any value anywhere in a case gives a verdict line; a damaged case never raises."""
    case = copy.deepcopy(data.draw(st.sampled_from(PUBLIC)))
    path = data.draw(st.sampled_from(_paths_of(case)))
    node = case
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = data.draw(JSON_VALUES)
    verdict, cid, detail = case_outcome(case, 0, set())
    assert verdict in ("PASS", "FAIL", "SKIP")
    assert verdict != "FAIL" or detail.startswith("expected ")


def _pods_metric_case() -> dict[str, Any]:
    """ctl-scale-up-cm (a Pods AverageValue metric) with its target written as upstream's
    TestNoBackoffUpscaleCM writes it: an averageValue and no type."""
    case = copy.deepcopy(next(c for c in PUBLIC if c["id"] == "ctl-scale-up-cm"))
    target = case["inputs"]["hpa"]["metrics"][0]["pods"]["target"]
    del target["type"]
    return case


def test_a_target_without_type_is_a_deviation_read_like_upstream(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """kube-apiserver refuses a target without a type, so the controller never syncs one
    (InvalidSpec); upstream's controller, which its unit tests feed such HPAs, reads Pods and
    External targets by their value fields alone and fails an Object target as "neither a value
    target nor an average value target was set" (TestConditionFailedGetMetrics/FailedGetObjectMetric
    writes `Target{Value: ...}`). The deviation's replay reproduces that on the same Reconciler."""
    pods_case = _pods_metric_case()
    obj = copy.deepcopy(next(c for c in PUBLIC if c["id"] == "ctl-scale-up-cm-object"))
    obj["id"] = "object-target-without-type"
    del obj["inputs"]["hpa"]["metrics"][0]["object"]["target"]["type"]
    obj["expected"] = {"status_desired_replicas": 3, "scale_updated": False, "reconcile_returns_error": True,
                       "conditions": [{"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale"},
                                      {"type": "ScalingActive", "status": "False", "reason": "FailedGetObjectMetric"}]}
    code, lines = _replay(tmp_path, capsys, [pods_case, obj])
    skip = "deviation invalid-spec-never-synced: "
    assert [line.split(": ", 1)[0] for line in lines] == [f"SKIP {pods_case['id']}", "SKIP object-target-without-type",
                                                          "0 passed, 0 failed, 2 skipped"]  # fmt: skip
    assert all(line.split(": ", 1)[1].startswith(skip) for line in lines[:2])
    assert reconcile(obj["inputs"])["conditions"][1]["reason"] == "InvalidSpec"
    message = reconcile(obj["inputs"], as_upstream=True)["conditions"][1]["message"]
    assert message.endswith("invalid object metric source: neither a value target nor an average value target was set")


def test_feeding_back_the_written_status_avoids_a_second_write() -> None:
    """TestAvoidUnnecessaryUpdates, for an External metric whose status carries its selector:
    the status this sync writes, given back as the previous status, is not written again."""
    inputs = copy.deepcopy(next(c for c in PUBLIC if c["id"] == "ctl-tolerance-cm-external")["inputs"])
    first = reconcile(copy.deepcopy(inputs))
    assert first["status_update"] is True
    inputs["hpa"]["status"] = {
        "currentReplicas": 4, "desiredReplicas": first["status_desired_replicas"], "lastScaleTime": None,
        "conditions": [{**c, "lastTransitionTime": 0} for c in first["conditions"]],
        "currentMetrics": [{"type": "External", "external": {"metric": {"name": "qps", "selector": {}},
                                                             "current": {"value": "8600m"}}}],
    }  # fmt: skip
    case = {"id": "avoid-update", "kind": "controller_reconcile", "inputs": inputs, "expected": {"status_update": False}}
    assert case_outcome(case, 0, set()) == ("PASS", "avoid-update", "")  # the selector is a known field
    inputs["hpa"]["status"]["currentMetrics"][0]["external"]["current"]["value"] = "8601m"
    assert reconcile(inputs)["status_update"] is True


def test_rate_limit_cases_without_effective_rules_apply_the_api_defaults_themselves() -> None:
    """A behavior_rate_limit case that gives only `*_rules_as_given` gets the autoscaling/v2
    defaulting (GenerateHPAScale{Up,Down}Rules) applied by the runner: same answers."""
    cases = [copy.deepcopy(c) for c in PUBLIC if c["kind"] == "behavior_rate_limit"]
    for case in cases:
        del case["inputs"]["scale_up_rules_effective"], case["inputs"]["scale_down_rules_effective"]
    assert cases and [case_outcome(c, 0, set())[0] for c in cases] == ["PASS"] * len(cases)
