"""`prom-autoscaler-controller backtest …` / `python -m controller.backtest …`: the command.

`main(argv) -> exit status`: parses the flags, reads the clock once (for `now` in times), runs the
backtest with progress on stderr, prints the chosen output (`-o text|json|csv`) on stdout and
writes `--html FILE`. Errors a user can fix print one message on stderr and exit 1 (2 for bad
flags).

Non-goals: the backtest itself (`run`), output formats (`report*`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TextIO

from controller.backtest.options import OptionsError, parse_options
from controller.backtest.report import render_text
from controller.backtest.report_data import render_csv, render_json
from controller.backtest.report_html import render_html
from controller.backtest.run import BacktestError, run_backtest
from controller.backtest.spec_file import SpecError
from controller.history.prometheus import HistoryError
from controller.history.resolve import Unresolvable
from controller.history.rules import ConfigError

__all__ = ["main"]


class _Progress:
    """`fetching history: 12/56 range queries` on stderr (rewritten in place on a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if self._tty:
            self._stream.write(f"\rfetching history: {done}/{total} range queries")
            if done == total:
                self._stream.write("\n")
        elif percent // 25 != self._shown or done == total:  # a few lines in a log, not one per chunk
            self._shown = percent // 25
            self._stream.write(f"fetching history: {done}/{total} range queries\n")
        self._stream.flush()


def main(argv: list[str]) -> int:
    try:
        opts = parse_options(argv, now=time.time())
    except OptionsError as err:
        print(f"backtest: {err}", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(run_backtest(opts, progress=_Progress(sys.stderr)))
    except ConfigError as err:
        print(f"backtest: the rule file {opts.rules_file} does not load:\n{err}", file=sys.stderr)
        return 1
    except (SpecError, Unresolvable, HistoryError, BacktestError) as err:
        print(f"backtest: {err}", file=sys.stderr)
        return 1
    if opts.html_file:
        try:
            with open(opts.html_file, "w", encoding="utf-8") as f:
                f.write(render_html(report))
        except OSError as err:
            print(f"backtest: cannot write {opts.html_file}: {err}", file=sys.stderr)
            return 1
        print(f"backtest: HTML report written to {opts.html_file}", file=sys.stderr)
    render = {"json": render_json, "csv": render_csv}.get(opts.output, render_text)
    sys.stdout.write(render(report))
    return 0
