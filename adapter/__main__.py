"""Command line of the adapter.

    python -m adapter [serve flags...]        serve the metrics APIs (the default)
    python -m adapter check-config FILE ...   validate a rule file and summarise what it exposes
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "check-config":
        from adapter.check_config import main as check_config_main

        return check_config_main(args[1:])
    from adapter.app import main as serve_main

    return serve_main(args)


if __name__ == "__main__":
    sys.exit(main())
