"""A command tree built as it is walked.

Typer turns every command's signature into click parameters before anything runs: for the
~160 commands of ``assay`` that is most of a command's start-up. Here a group holds each
subcommand as a recipe until it is looked up, so a run builds only the groups on its path and
the one command it runs, and a group's help lists its subcommands from their summaries without
building any of them.

The commands themselves stay plain Typer apps and functions: :func:`lazy_group` builds a group of
one exactly as Typer's ``get_group_from_info`` would, less its subcommands, which it adds as
recipes; a recipe builds the command with ``get_command_from_info``, Typer's own.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, NamedTuple

import typer
from typer.core import TyperGroup
from typer.main import (
    get_command_from_info,
    get_command_name,
    get_group_from_info,
    get_install_completion_arguments,
    solve_typer_info_defaults,
)
from typer.models import CommandInfo, TyperInfo

from assay.cli._metavars import readable
from assay.cli._params import read_plainly, read_plainly_param

Command = Any
"""A click command of Typer's (``typer.core.TyperCommand`` or a group): Typer ships its own
click, whose classes are not part of its typed API."""


# The small records here are NamedTuples: a dataclass compiles its methods when its module loads
# (half a millisecond each, on every command).


class Subcommand(NamedTuple):
    """A command of the root known by name and summary until it runs: ``load`` returns its
    Typer app (a group) or its function (a command), importing its module then. ``summary`` is
    what listings show: a group's help, or the first paragraph of a command's docstring.
    ``aliases``: shorter names for it (``e`` for ``experiment``), listed beside its name."""

    load: Callable[[], typer.Typer | Callable[..., Any]]
    summary: str
    aliases: tuple[str, ...] = ()


class _Recipe(NamedTuple):
    build: Callable[[], Command]
    summary: str
    hidden: bool


class _Commands(MutableMapping[str, Command]):
    """A group's subcommands by name, in the order they were added; each is built the first
    time it is read."""

    def __init__(self) -> None:
        self._built: dict[str, Command] = {}
        self._recipes: dict[str, _Recipe] = {}
        self._order: list[str] = []
        self.aliases: dict[str, list[str]] = {}
        """The shorter names of a subcommand (``experiment``: ``e``), by its name."""

    def add(self, name: str, recipe: _Recipe) -> None:
        if name in self:
            raise ValueError(f"two subcommands are named {name!r}")
        self._recipes[name] = recipe
        self._order.append(name)

    def summary(self, name: str) -> tuple[str, bool]:
        """``(summary, hidden)`` of a subcommand, without building it."""
        built = self._built.get(name)
        if built is None:
            recipe = self._recipes[name]
            return recipe.summary, recipe.hidden
        return summary_of(built), bool(built.hidden)

    def __getitem__(self, name: str) -> Command:
        built = self._built.get(name)
        if built is None:
            recipe = self._recipes[name]  # KeyError for a name never added, as a dict's
            try:
                built = recipe.build()
            except KeyError as exc:
                # Click looks commands up with .get(): a KeyError would read as "no such
                # command" and hide what went wrong.
                raise RuntimeError(f"building the command {name!r} failed: {exc!r}") from exc
            self._built[name] = built
            del self._recipes[name]
        return built

    def __setitem__(self, name: str, command: Command) -> None:
        if name not in self:
            self._order.append(name)
        self._recipes.pop(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if self._built.pop(name, None) is None:
            del self._recipes[name]
        self._order.remove(name)

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._recipes

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)


def _first_paragraph(text: str | None) -> str:
    """What a listing of commands shows of a help text: its first paragraph, whole (click cuts
    it to fit one line, which left half a sentence and '...')."""
    return " ".join(inspect.cleandoc(text or "").split("\n\n", 1)[0].split())


def summary_of(command: Command) -> str:
    return _first_paragraph(command.short_help or command.help)


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands are built when first looked up (see the module)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        given = self.commands
        self.commands: _Commands = _Commands()
        for name, command in given.items():
            self.commands[name] = command

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            # The help on stdout, as Typer's rich help printed it (click's goes to stderr, as an
            # error), so `assay e | less` shows it; the status stays 2.
            typer.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        # Typer's reads every (name, command) pair, which would build them all.
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            summary, hidden = self.commands.summary(name)
            if not hidden:
                # Its aliases beside it: they are hidden from the list, not from people.
                aliases = self.commands.aliases.get(name)
                rows.append((f"{name} ({', '.join(aliases)})" if aliases else name, summary))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _Settings(NamedTuple):
    """What Typer passes down its tree from the root app."""

    pretty_exceptions_short: bool
    rich_markup_mode: Any
    suggest_commands: bool

    def command(self, info: CommandInfo) -> Command:
        built = get_command_from_info(
            info,
            pretty_exceptions_short=self.pretty_exceptions_short,
            rich_markup_mode=self.rich_markup_mode,
        )
        return read_plainly(readable(built))


def lazy_group(info: TyperInfo, settings: _Settings) -> LazyGroup:
    """The group of ``info`` as Typer builds it, its subcommands added as recipes."""
    source = info.typer_instance
    if source is None:
        raise ValueError("a group needs its Typer app")
    shell = copy.copy(source)
    shell.registered_commands = []
    shell.registered_groups = []
    shell_info = copy.copy(info)
    shell_info.typer_instance = shell
    shell_info.cls = LazyGroup
    group = get_group_from_info(
        shell_info,
        pretty_exceptions_short=settings.pretty_exceptions_short,
        rich_markup_mode=settings.rich_markup_mode,
        suggest_commands=settings.suggest_commands,
    )
    assert isinstance(group, LazyGroup)
    # The group's own options (`assay agent --slots N` runs an agent).
    read_plainly(readable(group))
    # A hidden command running a listed one's function is its alias (`ls` of `list`).
    listed = {
        c.callback: c.name or get_command_name(c.callback.__name__)
        for c in source.registered_commands
        if c.callback is not None and not c.hidden
    }
    for command_info in source.registered_commands:
        callback = command_info.callback
        if callback is None:
            raise ValueError(f"a command of {info.name!r} has no function")
        name = command_info.name or get_command_name(callback.__name__)
        if command_info.hidden and callback in listed:
            group.commands.aliases.setdefault(listed[callback], []).append(name)
        summary = _first_paragraph(
            command_info.short_help or command_info.help or inspect.getdoc(callback)
        )
        group.commands.add(
            name,
            _Recipe(
                lambda ci=command_info: settings.command(ci),  # type: ignore[misc]
                summary,
                bool(command_info.hidden),
            ),
        )
    for sub_info in source.registered_groups:
        solved = solve_typer_info_defaults(sub_info)
        if not solved.name:
            raise ValueError(f"a group added to {info.name!r} has no name")
        group.commands.add(
            solved.name,
            _Recipe(
                lambda si=sub_info: lazy_group(si, settings),  # type: ignore[misc]
                _first_paragraph(solved.short_help or solved.help),
                bool(solved.hidden),
            ),
        )
    return group


def _subcommand_recipe(
    name: str, entry: Subcommand, settings: _Settings, *, hidden: bool
) -> _Recipe:
    def build() -> Command:
        loaded = entry.load()
        if isinstance(loaded, typer.Typer):
            group = TyperInfo(loaded, name=name, help=entry.summary, hidden=hidden)
            return lazy_group(group, settings)
        # A command's help is its docstring; the summary listed for it before it is built must
        # be that docstring's first paragraph (tested).
        single = CommandInfo(name=name, callback=loaded)
        single.hidden = hidden
        return settings.command(single)

    return _Recipe(build, entry.summary, hidden)


def root_command(app: typer.Typer, subcommands: dict[str, Subcommand]) -> LazyGroup:
    """The click command ``app()`` would run, with ``subcommands`` added to ``app``'s own, each
    built when it is first looked up."""
    settings = _Settings(
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
    )
    root = lazy_group(TyperInfo(app), settings)
    for name, entry in subcommands.items():
        root.commands.add(name, _subcommand_recipe(name, entry, settings, hidden=False))
        for alias in entry.aliases:
            root.commands.add(alias, _subcommand_recipe(alias, entry, settings, hidden=True))
            root.commands.aliases.setdefault(name, []).append(alias)
    if app._add_completion:
        for param in get_install_completion_arguments():
            read_plainly_param(param)
            root.params.append(param)
    return root


__all__ = ["LazyGroup", "Subcommand", "lazy_group", "root_command", "summary_of"]
