"""``-h`` speaks to people: values are named as words (``--grace SECONDS``, ``--label LABEL``,
``UUID...``), never as Python types (``<float range>``, ``<list[str]>``), and a command's
aliases are listed beside it (``experiment (e)``, ``list (ls)``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from click.testing import CliRunner

from assay.cli._app import command

PYTHON_TYPE = re.compile(r"<(int|float|str|path|bool|list\[[^\]]*\]|[a-z]+ range)>")


def paths(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name in getattr(group, "commands", {}):
        sub = group.commands[name]
        if not sub.hidden:
            yield from paths(sub, (*path, name))


def helps() -> Iterator[tuple[str, str]]:
    runner = CliRunner()
    for path in paths(command()):
        done = runner.invoke(command(), [*path, "--help"], prog_name="assay")
        assert done.exit_code == 0, (path, done.output)
        yield " ".join(path), done.output


def test_no_help_names_a_python_type() -> None:
    seen = 0
    wrong = []
    for path, text in helps():
        seen += 1
        wrong += [f"{path}: {m.group(0)}" for m in PYTHON_TYPE.finditer(text)]
    assert seen > 100 and wrong == []


def test_values_are_named_for_what_they_are() -> None:
    shown = dict(helps())
    assert "--grace SECONDS" in shown["down"]
    assert "--port PORT" in shown["up"] and "--db URL" in shown["up"]
    assert "--slots N" in shown["up"] and "--config FILE" in shown["up"]
    assert "--allowed-host HOST" in shown["up"]
    assert "--label LABEL" in shown["agent"] and "--home DIR" in shown["agent"]
    assert "--config KEY=VALUE" in shown["experiment create"]
    assert re.search(r"^  EXPERIMENT_ID\s+experiment id", shown["experiment describe"], re.M)
    assert re.search(r"^  UUID\.\.\.\s", shown["checkpoint delete"], re.M)
    assert re.search(r"^  LABEL\.\.\.\s", shown["experiment set labels"], re.M)
    assert "--tail N" in shown["trial logs"]


def test_aliases_are_listed_beside_their_command() -> None:
    shown = dict(helps())
    for alias in ("experiment (e)", "trial (t)", "checkpoint (c)", "job (j)"):
        assert re.search(rf"^  {re.escape(alias)}\s", shown[""], re.M), alias
    assert re.search(r"^  list \(ls\)\s", shown["experiment"], re.M)
    assert re.search(r"^  list \(ls\)\s", shown["agent"], re.M)
    # An alias runs its command, and is not listed twice.
    assert not re.search(r"^  e\s", shown[""], re.M)
    done = CliRunner().invoke(command(), ["e", "ls", "--help"], prog_name="assay")
    assert done.exit_code == 0 and "List experiments" in done.output


def test_every_id_argument_completed_has_its_completer() -> None:
    from assay.cli._complete import COMPLETERS
    from assay.cli._metavars import ID_ARGUMENTS

    assert set(COMPLETERS) == ID_ARGUMENTS
