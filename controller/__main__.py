"""Command line of the controller (`prom-autoscaler-controller`, `python -m controller`).

    prom-autoscaler-controller [run] [flags...]       run the controller (the default)
    prom-autoscaler-controller explain NS/NAME ...    print an autoscaler's last decision, in words
    prom-autoscaler-controller backtest ...           replay a spec against Prometheus history

Each subcommand is imported only when chosen, so `explain` starts without the controller's
dependencies and `run` without the backtest's.
"""

from __future__ import annotations

import sys

_USAGE = """usage: prom-autoscaler-controller [run|explain|backtest] [flags...]

  run        run the controller (default; see `run --help`)
  explain    print the last scaling decision of an autoscaler (see `explain --help`)
  backtest   replay an autoscaler spec against Prometheus history (see `backtest --help`)
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):  # the overview of the subcommands; `run --help` has run's flags
        print(_USAGE)
        return 0
    command = args[0] if args and not args[0].startswith("-") else "run"
    rest = args[1:] if args and args[0] == command else args
    if command == "run":
        from controller.app import main as run_main

        return run_main(rest)
    if command == "explain":
        from controller.explain import main as explain_main

        return explain_main(rest)
    if command == "backtest":
        from controller.backtest.cli import main as backtest_main

        return backtest_main(rest)
    if command == "help":
        print(_USAGE)
        return 0
    print(f"unknown command {command!r}\n\n{_USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
