"""Reading adapter conformance case files: the file's shape checked (a malformed file is one
FAIL line, never a traceback) and the fixtures and cases of its companion files indexed, so a
file holding only some cases can name setups and fixtures defined in the public one.

Non-goals: running cases (hack/conformance/adapter_runner.py) or checking them (the checker modules).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["CaseFileError", "companions", "hashable", "index", "load"]


class CaseFileError(ValueError):
    """The file is not a case file this runner can read (reported as one FAIL, never a traceback)."""


def load(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """(fixtures, cases) of a case file; CaseFileError for anything that is not that shape."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CaseFileError(f"cannot read the case file: {err}") from None
    if not isinstance(data, dict):
        raise CaseFileError(f"the case file is a JSON {type(data).__name__}, not an object with `cases`")
    fixtures, cases = data.get("fixtures", {}), data.get("cases")
    if not isinstance(cases, list):
        raise CaseFileError("the case file has no `cases` list")
    if not isinstance(fixtures, dict):
        raise CaseFileError("`fixtures` is not an object")
    if not cases:
        raise CaseFileError("the case file holds no cases: nothing was checked")
    return fixtures, cases


_REPO = Path(__file__).resolve().parents[2]


def index(case_list: list[Any]) -> dict[Any, Any]:
    return {c.get("id"): c for c in case_list if isinstance(c, dict) and hashable(c.get("id"))}


def companions(path: Path) -> tuple[dict[str, Any], dict[Any, Any]]:
    """Fixtures and cases of the other prometheus-adapter case files beside `path` and in the
    shared spec's vectors directory (unreadable ones are ignored: they are not being run)."""
    fixtures: dict[str, Any] = {}
    indexed: dict[Any, Any] = {}
    folders = {path.resolve().parent, (_REPO.parent / "shared" / "spec" / "vectors").resolve()}
    for folder in sorted(folders):
        for other in sorted(folder.glob("prometheus-adapter*.json")):
            if other.resolve() == path.resolve():
                continue
            try:
                other_fixtures, other_cases = load(other)
            except CaseFileError:
                continue
            fixtures = {**other_fixtures, **fixtures}
            indexed = {**index(other_cases), **indexed}
    return fixtures, indexed


def hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None)))
