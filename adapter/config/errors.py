"""Errors raised while loading or compiling a rule file.

Job: carry every problem found in one rule file, each naming the file, the rule (list and index),
the field path and the reason, so a user can fix them all in one pass. Non-goal: formatting for a
particular front end (the CLI and the server both print `str(error)`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PARSE_STAGE", "READ_STAGE", "ConfigError", "Problem", "fatal_line"]

PARSE_STAGE = "unable to parse metrics discovery config"
READ_STAGE = "unable to load metrics discovery config file"


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One thing wrong with a rule file."""

    source: str
    """The file name (or `<string>`) the text came from."""
    location: str = ""
    """The rule, e.g. `rules[3]`, `externalRules[0]`, `resourceRules.cpu`; empty for the document."""
    field: str = ""
    """Field path inside the rule, e.g. `name.matches`, `seriesFilters[1].is`."""
    reason: str
    line: int | None = None
    """1-based line in the file, when known."""
    series_query: str | None = None
    """The rule's seriesQuery, quoted in the message so users can find the rule in long files."""

    def __str__(self) -> str:
        where = self.source
        path = ".".join(part for part in (self.location, self.field) if part)
        if path:
            where = f"{where}: {path}"
        if self.line is not None:
            where = f"{where} (line {self.line})"
        text = f"{where}: {self.reason}"
        if self.series_query:
            text += f" [rule with seriesQuery {self.series_query!r}]"
        return text


class ConfigError(ValueError):
    """The rule file cannot be used; `.problems` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], *, stage: str = "") -> None:
        if not problems:
            raise ValueError("ConfigError needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.stage = stage
        """Upstream's words for the step that failed, in front of the message (e.g. `unable to
        parse metrics discovery config` for YAML that does not read as a rule file), so what users
        grep for in prometheus-adapter's logs is found in ours too."""
        super().__init__(str(self))

    def __str__(self) -> str:
        prefix = f"{self.stage}: " if self.stage else ""
        if len(self.problems) == 1:
            return f"{prefix}{self.problems[0]}"
        lines = [f"{prefix}{len(self.problems)} problems in {self.problems[0].source}:"]
        lines.extend(f"  - {problem}" for problem in self.problems)
        return "\n".join(lines)


def fatal_line(err: ConfigError) -> str:
    """prometheus-adapter's fatal start-up line for a rule file it cannot use, around our message:
    what log alerts and runbooks written for it search for. A file that cannot be read or parsed
    fails while the config loads; one whose rules cannot be compiled, while the provider is built."""
    if err.stage in (PARSE_STAGE, READ_STAGE):
        return f"unable to load metrics discovery config: unable to load metrics discovery configuration: {err}"
    return f"unable to construct custom metrics provider: unable to construct naming scheme from metrics rules: {err}"
