"""A command's flag reference, read from its argparse parser: each argument group is a table of
flags, their default and their help, as `--help` prints them.

Non-goal: documenting what a flag does beyond its help text; the pages under docs/ explain.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}` (positional)"
    metavar = ""
    if action.nargs != 0:
        metavar = " " + str(action.metavar or action.dest.upper())
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS) or action.required:
        return "required" if action.required else ""
    if action.default in ("", [], ()):
        return ""
    if isinstance(action.default, bool):
        return f"`{str(action.default).lower()}`"
    return f"`{_escape(str(action.default))}`"


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:
        params = {**vars(action), "prog": prog, "default": action.default}
        text = text % params
    return _escape(" ".join(text.split()))


def _actions(group: argparse._ArgumentGroup) -> Iterable[argparse.Action]:
    return (a for a in group._group_actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction))


def tables(parser: argparse.ArgumentParser, level: int = 2) -> str:
    """One Markdown table per argument group, under headings of the given level (no usage line:
    argparse wraps it to the terminal's width)."""
    out: list[str] = []
    for group in parser._action_groups:
        actions = list(_actions(group))
        if not actions:
            continue
        heading = {"options": "Flags", "optional arguments": "Flags",
                   "positional arguments": "Arguments"}.get(group.title or "", group.title or "Flags")
        out += [f"{'#' * level} {heading[:1].upper()}{heading[1:]}", ""]
        if group.description:
            out += [_escape(" ".join(group.description.split())), ""]
        out += ["| flag | default | meaning |", "| --- | --- | --- |"]
        out += [f"| {_names(a)} | {_default(a)} | {_help(a, parser.prog)} |" for a in actions]
        out.append("")
    return "\n".join(out)
