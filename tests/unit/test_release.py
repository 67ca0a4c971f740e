"""Release artefacts a user relies on (docs/release.md):

* one version: pyproject's `version` is the chart's `version` and `appVersion`, `make dist` stamps
  it on the chart package, and CHANGELOG.md (Keep a Changelog) has an `[Unreleased]` section or one
  for that version, which the release workflow publishes as the release notes;
* `make lint`'s hadolint passes on the Dockerfile and fails on one that breaks its rules, and
  actionlint passes on .github/workflows and fails on a workflow with a broken expression, so
  neither check is a no-op.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.paths import REPO

BIN = Path(sys.executable).parent
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_chart_version_and_app_version_are_pyprojects() -> None:
    chart = yaml.safe_load((REPO / "charts" / "prom-autoscaler" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION), \
        "bump pyproject.toml's version, Chart.yaml's version and appVersion together"


def test_make_dist_packages_the_chart_at_pyprojects_version() -> None:
    plan = subprocess.run(["make", "-n", "dist"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert f"helm package charts/prom-autoscaler --destination dist --version {VERSION} --app-version {VERSION}" in plan
    assert "-m build --outdir dist ." in plan


def test_changelog_follows_keep_a_changelog() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.MULTILINE)
    headings = re.findall(r"^## .*$", text, flags=re.MULTILINE)
    assert len(releases) == len(headings), f"a release heading is not '## [X.Y.Z] - YYYY-MM-DD': {headings}"
    names = [name for name, _ in releases]
    assert "Unreleased" in names or VERSION in names, f"no section for {VERSION} nor [Unreleased]"
    assert all(date for name, date in releases if name != "Unreleased"), "a released version needs its date"
    kinds = set(re.findall(r"^### (.*)$", text, flags=re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is missing from the venv: run hack/setup.sh (pyproject's test extra installs it)")
    return str(path)


@pytest.mark.timeout(30)  # two runs of a linter binary: 2.4 s seen with four test workers on 2 cores
def test_hadolint_passes_the_dockerfile_and_fails_a_bad_one(tmp_path: Path) -> None:
    ok = subprocess.run([_tool("hadolint"), "Dockerfile"], cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /src && pip install .\n")
    refused = subprocess.run([_tool("hadolint"), str(bad)], capture_output=True, text=True)
    assert refused.returncode != 0 and "DL3007" in refused.stdout, refused.stdout  # the 'latest' tag


@pytest.mark.timeout(30)  # two runs of a linter binary: 2.4 s seen with four test workers on 2 cores
def test_actionlint_passes_the_workflows_and_fails_a_bad_one(tmp_path: Path) -> None:
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert {w.name for w in workflows} >= {"ci.yml", "release.yml", "e2e-kind.yml"}
    ok = subprocess.run([_tool("actionlint"), *map(str, workflows)], cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    shutil.copy(REPO / ".github" / "workflows" / "ci.yml", bad)
    bad.write_text(bad.read_text().replace("runs-on: ubuntu-latest", "runs-on: ${{ matrix.nowhere }}", 1))
    refused = subprocess.run([_tool("actionlint"), str(bad)], cwd=tmp_path, capture_output=True, text=True)
    assert refused.returncode != 0 and "nowhere" in refused.stdout, refused.stdout
