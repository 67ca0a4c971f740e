"""The case loop both conformance runners share: a case without an id goes by the same name
(`cases[N]`, its place in the file) in the adapter's and the controller's output, an unreadable
file is one FAIL naming it in both, and a documented deviation no case encodes excuses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hack.conformance import adapter_runner, controller_runner
from hack.conformance.runner import case_label
from tests import paths


@pytest.mark.parametrize(("case", "index", "label"), [
    pytest.param({"id": "a"}, 0, "a", id="string id"),
    pytest.param({"id": 7}, 3, "7", id="number id"),
    pytest.param({"id": "  "}, 2, "cases[2]", id="blank id"),
    pytest.param({"id": True}, 4, "cases[4]", id="boolean is no id"),
    pytest.param({}, 5, "cases[5]", id="no id"),
    pytest.param("not-an-object", 1, "cases[1]", id="not an object"),
])
def test_case_label(case: object, index: int, label: str) -> None:
    assert case_label(case, index) == label


@pytest.mark.parametrize("run", [adapter_runner.run, controller_runner.run], ids=["adapter", "controller"])
def test_both_runners_name_an_unnamed_case_alike(run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"fixtures": {}, "cases": [{"expected": {}}, None]}))
    assert run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == ["FAIL cases[0]", "FAIL cases[1]"]
    assert lines[-1] == "0 passed, 2 failed, 0 skipped"


@pytest.mark.parametrize("run", [adapter_runner.run, controller_runner.run], ids=["adapter", "controller"])
def test_both_runners_fail_an_unreadable_file_alike(run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    assert run(path) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("FAIL broken.json: ")
    assert lines[-1] == "0 passed, 1 failed, 0 skipped"


def test_a_documented_controller_deviation_excuses_no_wrong_answer(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The controller's deviations are listed for reviewers (no public case encodes one): a wrong
    expectation stays a FAIL, never a SKIP."""
    public = json.loads((paths.VECTORS / "hpa-public.json").read_text())["cases"]
    case = json.loads(json.dumps(public[0]))
    key = next(iter(case["expected"]))
    case["expected"][key] = "not what upstream answers"
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": [case]}))
    assert controller_runner.run(path) == 1
    assert capsys.readouterr().out.splitlines()[0].startswith(f"FAIL {case['id']}: expected {key}=")
