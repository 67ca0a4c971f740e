"""The adapter conformance runner passes every prometheus-adapter vector file (deviations are
listed in the runner's DEVIATIONS table and printed as SKIP with their reason; a prose
expectation, which FIELDS.md leaves to a person, is a SKIP saying so)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests import paths

REPO = Path(__file__).resolve().parents[3]
VECTORS = paths.VECTORS
FILES = sorted(VECTORS.glob("prometheus-adapter*.json"))


def test_vector_files_exist() -> None:
    assert FILES, f"no prometheus-adapter*.json in {VECTORS}"


@pytest.mark.timeout(15)  # a fresh interpreter (aiohttp import, ~70 cases): ~1.5 s, more on a busy CI box
@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in FILES])
def test_conformance_runner_passes(path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "hack" / "conformance.py"), "adapter", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=15)
    lines = proc.stdout.strip().splitlines()
    failures = [line for line in lines if line.startswith("FAIL")]
    assert proc.returncode == 0, "\n".join(failures) or proc.stderr
    assert lines and lines[-1].endswith("skipped") and " 0 failed" in lines[-1]
    unexplained = [line for line in lines if line.startswith("SKIP")
                   and ": deviation " not in line and ": prose expectation" not in line]
    assert unexplained == [], "cases skipped without a listed deviation or a prose reason"
