"""The built wheel installs into a fresh virtual environment and gives a user both console scripts.

`python -m build --wheel` builds it as `make dist` does (an isolated build environment with the
pinned setuptools); `pip install` puts it into a new venv; both `prom-autoscaler-adapter --help`
and `prom-autoscaler-controller --help` run from that venv's bin/, outside the repository, and
import the installed packages (not the checkout). The dependencies are not downloaded again (that
would take minutes): a .pth file lends the fresh venv this venv's site-packages, and the wheel is
installed with --no-deps; its declared requirements are checked against that environment with
`pip check`. 10-20 s here (the build environment's download dominates).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=100)


def test_wheel_installs_both_console_scripts_into_a_fresh_venv(tmp_path: Path) -> None:
    built = _run(sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(REPO), cwd=tmp_path)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"prom_autoscaler-{VERSION}-py3-none-any.whl"

    venv = tmp_path / "fresh"
    made = _run(sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                     cwd=tmp_path).stdout.strip())
    (site / "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel),
                     cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    for script, words in (("prom-autoscaler-adapter", "--prometheus-url"),
                          ("prom-autoscaler-controller", "explain")):
        ran = _run(str(venv / "bin" / script), "--help", cwd=tmp_path)
        assert ran.returncode == 0 and words in ran.stdout, f"{script}: {ran.stdout[-2000:]}{ran.stderr[-2000:]}"
    where = _run(str(python), "-c", "import adapter, controller, kubecommon; "
                 "print(adapter.__file__, controller.__file__, kubecommon.__file__)", cwd=tmp_path).stdout.split()
    assert len(where) == 3 and all(path.startswith(str(site)) for path in where), where
    deps = _run(sys.executable, "-m", "pip", "--python", str(python), "check", cwd=tmp_path)
    assert "prom-autoscaler" not in deps.stdout, deps.stdout
