"""The architecture the docs draw (docs/architecture.md) is the one the code has.

These checks fail the build when a pure core starts doing I/O, a layer reaches upward, a module
grows past the size budget or keeps global state, a type annotation stops holding (mypy --strict),
the architecture page's layer list drifts from the contracts import-linter enforces, or `ruff check` finds a
lint regression (CI runs `make test`, not `make lint`). The workshop, hack/, obeys the same size,
docstring and type checks, and reaches the product only through its public names.
"""

from __future__ import annotations

import ast
import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("adapter", "controller", "kubecommon")
WORKSHOP = "hack"
MAX_MODULE_LINES = 420


def _product_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _workshop_modules() -> list[Path]:
    return sorted((ROOT / WORKSHOP).rglob("*.py"))


@pytest.mark.timeout(60)
def test_import_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


@pytest.mark.timeout(30)
def test_tree_passes_ruff() -> None:
    """`ruff check` (rules and reasoned exceptions in pyproject.toml) over the whole tree, as `make lint` runs it."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


@pytest.mark.timeout(180)
def test_product_packages_type_check_strictly(tmp_path: Path) -> None:
    """`mypy --strict` (settings in pyproject.toml) over the three product packages and hack/, cold cache."""
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), *PACKAGES, WORKSHOP],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"


def test_architecture_page_lists_every_enforced_layer() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    architecture = ARCHITECTURE_PAGE.read_text()
    named: set[str] = set()
    for section in config.sections():
        for key in ("layers", "source_modules"):
            for line in config[section].get(key, "").splitlines():
                named.update(part.strip() for part in line.split("|") if part.strip())
    missing = sorted(module for module in named if f"`{module}`" not in architecture)
    assert not missing, f"docs/architecture.md does not mention: {missing}"


def test_architecture_page_names_exactly_the_pure_cores_the_contract_enforces() -> None:
    """The architecture page's "Pure cores (...)" list is the pure-cores contract's module list: a module
    called pure in one place and left unchecked (or checked and never called pure) fails here."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    enforced = {line.strip() for line in config["importlinter:contract:pure-cores"]["source_modules"].splitlines()
                if line.strip()}
    page = ARCHITECTURE_PAGE.read_text()
    listed = set(re.findall(r"`([\w.]+)`", page.split("Pure cores (", 1)[1].split(") import", 1)[0]))
    assert listed == enforced, f"docs/architecture.md only: {sorted(listed - enforced)}; contract only: {sorted(enforced - listed)}"


@pytest.mark.parametrize("path", _product_modules() + _workshop_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_module_hygiene(path: Path) -> None:
    source = path.read_text()
    assert len(source.splitlines()) <= MAX_MODULE_LINES, "split the module: one concept each"
    tree = ast.parse(source)
    assert not any(isinstance(node, ast.Global) for node in ast.walk(tree)), "no global state"
    if path.name != "__init__.py" and source.strip():
        assert ast.get_docstring(tree), "every module opens with its job and its non-goals"


def _private_product_names(tree: ast.Module) -> list[str]:
    """Underscore names of the product packages a module imports or reads off an imported module."""
    modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            parts = [*node.module.split("."), *(alias.name for alias in node.names)]
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if any(part.startswith("_") and not part.startswith("__") for part in parts)]
            modules.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name.split(".")[0] for alias in node.names
                           if alias.name.split(".")[0] in PACKAGES)
    found += [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in modules and node.attr.startswith("_") and not node.attr.startswith("__")]
    return found


@pytest.mark.parametrize("path", _workshop_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_workshop_uses_only_public_product_names(path: Path) -> None:
    """hack/ reaches the product through its public names: a private one it needs is made public
    in its home module (or hack/ uses the public API), so the product can change its insides."""
    assert not _private_product_names(ast.parse(path.read_text()))


_CLOCK = re.compile(r"time\.(time|monotonic)\(|datetime\.now\(|loop\.time\(|asyncio\.sleep\(")


@pytest.mark.parametrize("package", ["controller/algorithm", "adapter/rules", "adapter/config"])
def test_pure_cores_never_read_the_clock(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules, f"{package} has no modules: a renamed package would pass this check unread"
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in modules
                 for n, line in enumerate(p.read_text().splitlines(), 1) if _CLOCK.search(line)]
    assert not offenders
