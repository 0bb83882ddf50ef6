"""`banach --help` lists its commands by what a person is doing, in the order they do it, not A to Z."""
from __future__ import annotations

import click

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start", ("init", "demo", "doctor")),
    ("Watch", ("status", "serve", "logs", "journal", "monitor", "plot")),
    ("Steer", ("up", "down", "ctl", "refresh")),
    ("Deliver", ("deliver",)),
    ("Run in production", ("run", "export", "setup-users")),
)


class SectionedGroup(click.Group):
    """A click group whose help shows its commands under SECTIONS; a command no section names goes under Other."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        named = [name for _, names in SECTIONS for name in names if name in self.commands]
        return named + sorted(set(self.commands) - set(named))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        placed = {name for _, names in SECTIONS for name in names}
        sections = [*SECTIONS, ("Other", tuple(sorted(set(self.commands) - placed)))]
        limit = formatter.width - 6 - max((len(name) for name in self.commands), default=0)
        for title, names in sections:
            rows = [(name, self.commands[name].get_short_help_str(limit)) for name in names
                    if name in self.commands and not self.commands[name].hidden]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
