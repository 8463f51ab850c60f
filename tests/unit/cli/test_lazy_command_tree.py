"""The command tree ``assay`` runs is built as it is walked (``assay.cli._lazy``): it must be the
tree Typer would build from the same apps, and its listings must show what the built commands
say of themselves."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from click.testing import CliRunner

from assay.cli._app import SUBCOMMANDS, app, command
from assay.cli._lazy import LazyGroup, Subcommand, root_command, summary_of


def walk(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from walk(sub, (*path, name))


def eager_tree() -> Any:
    """The same commands added the usual Typer way and built at once by Typer."""
    full = copy.copy(app)
    full.registered_commands = list(app.registered_commands)
    full.registered_groups = list(app.registered_groups)
    for name, entry in SUBCOMMANDS.items():
        loaded = entry.load()
        for called, hidden in ((name, False), *((alias, True) for alias in entry.aliases)):
            if isinstance(loaded, typer.Typer):
                full.add_typer(loaded, name=called, help=entry.summary, hidden=hidden)
            else:
                full.command(called, hidden=hidden)(loaded)
    return typer.main.get_command(full)


def shape(command: Any) -> dict[str, Any]:
    params = [
        (p.name, tuple(p.opts), tuple(p.secondary_opts), p.required, repr(p.default), p.hidden)
        for p in command.params
    ]
    return {
        "help": command.help,
        "hidden": command.hidden,
        "params": params,
        "commands": sorted(getattr(command, "commands", {})),
        "no_args_is_help": getattr(command, "no_args_is_help", None),
        "invoke_without_command": getattr(command, "invoke_without_command", None),
    }


def test_the_lazy_tree_is_the_tree_typer_builds() -> None:
    lazy = dict(walk(command()))
    eager = dict(walk(eager_tree()))
    assert sorted(lazy) == sorted(eager)
    assert len(lazy) > 130
    for path, built in lazy.items():
        assert shape(built) == shape(eager[path]), " ".join(path)


def test_a_listing_shows_each_summary_as_the_built_command_gives_it() -> None:
    root = command()
    pending = [root]
    checked = 0
    while pending:
        group = pending.pop()
        for name in list(group.commands):
            listed = group.commands.summary(name)
            built = group.commands[name]
            assert listed == (summary_of(built), bool(built.hidden)), name
            checked += 1
            if isinstance(built, LazyGroup):
                pending.append(built)
    assert checked > 130


def test_a_group_is_built_only_when_its_path_is_run() -> None:
    loads: list[str] = []

    def loader(name: str) -> Any:
        def load() -> typer.Typer:
            loads.append(name)
            sub = typer.Typer()

            @sub.command()
            def hello() -> None:
                """Say hello."""
                print(f"hello from {name}")

            @sub.command()
            def other() -> None:
                """Another."""

            return sub

        return load

    root_app = typer.Typer(rich_markup_mode=None, add_completion=False)

    @root_app.callback()
    def _root() -> None:
        pass

    entries = {n: Subcommand(loader(n), f"The {n} group.") for n in ("one", "two")}
    runner = CliRunner()
    shown = runner.invoke(root_command(root_app, entries), ["--help"])
    assert "The one group." in shown.output and "The two group." in shown.output
    assert loads == []
    done = runner.invoke(root_command(root_app, entries), ["two", "hello"])
    assert done.output == "hello from two\n" and loads == ["two"]


def test_a_subcommand_name_is_given_once() -> None:
    group = command()
    with pytest.raises(ValueError, match="two subcommands are named 'up'"):
        group.commands.add("up", group.commands._recipes["down"])


def test_a_mistyped_command_is_suggested_from_the_unbuilt_names() -> None:
    done = CliRunner().invoke(command(), ["experiement"], prog_name="assay")
    assert done.exit_code == 2
    assert "No such command 'experiement'. Did you mean 'experiment'?" in done.output


def test_a_command_line_that_cannot_be_read_is_refused_in_one_line_with_the_value_given() -> None:
    done = CliRunner().invoke(command(), ["e", "describe", "abc"], prog_name="assay")
    assert done.exit_code == 2
    assert done.output == (
        "error: Invalid value for 'EXPERIMENT_ID': Input should be a valid integer, unable to "
        "parse string as an integer (got 'abc'); `assay e describe -h` shows its usage\n"
    )
    done = CliRunner().invoke(command(), ["frobnicate"], prog_name="assay")
    assert done.output == "error: No such command 'frobnicate'; `assay -h` shows its usage\n"


def test_no_help_shows_a_markup_escape() -> None:
    """Help is plain text: ``\\[word]`` (rich's escape) would be shown with its backslash."""
    shown = []
    for path, built in walk(command()):
        texts = [built.help or "", *(getattr(p, "help", None) or "" for p in built.params)]
        shown += [f"{' '.join(path)}: {t}" for t in texts if "\\[" in t]
    assert shown == []


def test_a_command_that_fails_to_build_says_so_and_stays_listed() -> None:
    attempts: list[int] = []

    def broken() -> typer.Typer:
        attempts.append(1)
        raise KeyError("a missing setting")

    root_app = typer.Typer(rich_markup_mode=None, add_completion=False)

    @root_app.callback()
    def _root() -> None:
        pass

    root = root_command(root_app, {"broken": Subcommand(broken, "Never builds.")})
    done = CliRunner().invoke(root, ["broken"])
    assert isinstance(done.exception, RuntimeError)
    assert "building the command 'broken' failed: KeyError('a missing setting')" in str(
        done.exception
    )
    # Still listed, and looked up again (not "no such command") the next time.
    assert "Never builds." in CliRunner().invoke(root, ["--help"]).output
    CliRunner().invoke(root, ["broken"])
    assert len(attempts) == 2


@pytest.mark.parametrize("args", [[], ["e"], ["experiment", "set"], ["nni", "trial"]])
def test_a_bare_group_prints_its_help_on_stdout_and_exits_2(args: list[str]) -> None:
    done = CliRunner().invoke(command(), args, prog_name="assay")
    assert done.exit_code == 2
    assert done.stdout.startswith(f"Usage: assay {' '.join([*args, ''])}"), done.stdout
    assert "Commands:" in done.stdout and done.stderr == ""
