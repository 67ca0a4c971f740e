"""`prom-autoscaler-controller --help` shows the subcommands (run, explain, backtest), as a user
expects of a command with subcommands; each subcommand's `--help` shows its own flags; bare flags
still run the controller (the chart's container args)."""

from __future__ import annotations

import pytest

from controller.__main__ import main


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]])
def test_help_lists_the_subcommands(capsys, args):
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: prom-autoscaler-controller [run|explain|backtest]")
    assert all(f"  {command} " in out for command in ("run", "explain", "backtest"))


@pytest.mark.parametrize(("args", "flag"), [(["run", "--help"], "--leader-elect"),
                                            (["explain", "--help"], "--kubeconfig"),
                                            (["backtest", "--help"], "--prometheus-url")])
def test_each_subcommand_shows_its_own_flags(capsys, args, flag):
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 0
    assert flag in capsys.readouterr().out


def test_an_unknown_subcommand_is_refused_with_the_overview(capsys):
    assert main(["scale"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'scale'" in err and "backtest" in err
