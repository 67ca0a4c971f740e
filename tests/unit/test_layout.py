"""The unit tests are laid out in the shape of the product packages, so the tests of a module are
found where the module is: adapter/rules/goregex.py is tested in tests/unit/adapter/rules/test_goregex.py.

Three checks, each derived from the tree (no list of allowed paths to keep in step):
* every folder under tests/unit/<package> mirrors a product package;
* a test file whose name says it tests a subpackage's module (test_rules_query.py in
  tests/unit/adapter, test_registry.py where discovery/registry.py lives one level down) sits in
  that subpackage's folder;
* a test file that imports, from the package its folder mirrors, only one subpackage's modules sits
  in that subpackage's folder.
The workshop's tests follow the same rules: tests/unit/hack mirrors hack/'s rooms.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
PACKAGES = ("adapter", "controller", "kubecommon", "hack")


def _test_files() -> list[Path]:
    return sorted(path for pkg in PACKAGES for path in (UNIT / pkg).rglob("test_*.py"))


def _mirrored(test_dir: Path) -> Path:
    """The product package a folder of tests/unit stands for."""
    return ROOT / test_dir.relative_to(UNIT)


def _is_package(path: Path) -> bool:
    return (path / "__init__.py").is_file()


def _subpackages(package: Path) -> list[Path]:
    return sorted(child for child in package.iterdir() if _is_package(child))


@functools.cache
def _imported_modules(path: Path) -> tuple[str, ...]:
    """Dotted names of the modules and packages a file imports (`from a.b import c` names a.b.c
    when c is a module or package, else a.b). Imports are statements, so only statements are
    visited (ast.walk over every expression took about 2 s for the whole tree)."""
    names: list[str] = []
    statements: list[ast.AST] = list(ast.parse(path.read_text()).body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                child = ROOT.joinpath(*node.module.split("."), alias.name)
                is_module = child.is_dir() or child.with_suffix(".py").is_file()
                names.append(f"{node.module}.{alias.name}" if is_module else node.module)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                statements.extend(x for x in getattr(node, field, ()) if isinstance(x, ast.AST))
    return tuple(names)


def test_every_test_folder_mirrors_a_product_package() -> None:
    folders = sorted(p for pkg in PACKAGES for p in (UNIT / pkg).rglob("*")
                     if p.is_dir() and p.name != "__pycache__")
    strays = [str(f.relative_to(UNIT)) for f in folders if not _is_package(_mirrored(f))]
    assert not strays, f"tests/unit folders with no product package of the same path: {strays}"


def test_a_test_named_after_a_subpackage_module_sits_in_its_folder() -> None:
    misplaced: list[str] = []
    for path in _test_files():
        package = _mirrored(path.parent)
        words = path.stem.removeprefix("test_").split("_")
        prefixes = ["_".join(words[:n]) for n in range(1, len(words) + 1)]
        if not _is_package(package) or any((package / f"{p}.py").is_file() for p in prefixes):
            continue
        homes = sorted({sub.name for sub in _subpackages(package) for p in prefixes
                        if sub.name == p or (sub / f"{p}.py").is_file()})
        if homes:
            misplaced.append(f"{path.relative_to(UNIT)} -> {path.parent.relative_to(UNIT)}/{homes[0]}/")
    assert not misplaced, f"tests named after a subpackage's module, outside its folder: {misplaced}"


def test_a_test_of_one_subpackage_only_sits_in_its_folder() -> None:
    misplaced: list[str] = []
    for path in _test_files():
        package = _mirrored(path.parent)
        dotted = ".".join(path.parent.relative_to(UNIT).parts)
        own, subpackages = False, set()
        for module in _imported_modules(path):
            if module != dotted and not module.startswith(dotted + "."):
                continue
            head = module[len(dotted) + 1:].split(".")[0] if module != dotted else ""
            if not head or (package / f"{head}.py").is_file():
                own = True
            elif _is_package(package / head):
                subpackages.add(head)
        if not own and len(subpackages) == 1:
            misplaced.append(f"{path.relative_to(UNIT)} -> {path.parent.relative_to(UNIT)}/{subpackages.pop()}/")
    assert not misplaced, f"tests of one subpackage's modules outside its folder: {misplaced}"
