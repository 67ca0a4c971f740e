"""`python -m hack.docs_ref` writes the generated reference pages (`make docs-ref`); with
`--check` it writes nothing and exits 1 naming each stale page."""

from __future__ import annotations

import argparse
import sys

from hack.docs_ref.pages import ROOT, expected, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.docs_ref", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated page is stale")
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale()
        for path in outdated:
            print(f"{path} is stale: run `make docs-ref`", file=sys.stderr)
        return 1 if outdated else 0
    for path, text in expected().items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
