"""Every ``assay`` command the README and the docs show in a shell example names a command that
exists and only options that command has, so the docs cannot drift from the command tree. (The
commands that run here are run by the integration tests of each feature; this is what holds
for all of them.)"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.cli._app import command

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(bash|sh|console)\n(.*?)```", re.DOTALL)
INVOCATION = re.compile(r"(?:^|[\s;&|(])(?:\.venv/bin/)?assay ((?:[^#;&|)\n])*)")


def shown_commands() -> Iterator[tuple[str, str]]:
    """(where, the arguments after ``assay``) for each invocation in a shell block."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in SHELL_BLOCK.finditer(text):
            line_no = text.count("\n", 0, block.start()) + 1
            for offset, line in enumerate(block[2].splitlines(), start=1):
                shell = line
                if block[1] == "console":  # a transcript: only its prompts' lines are commands
                    if not line.startswith("$ "):
                        continue
                    shell = line[2:]
                for found in INVOCATION.finditer(shell.split(" # ")[0]):
                    where = f"{page.relative_to(ROOT)}:{line_no + offset}"
                    yield where, found[1].strip()


def _options(cmd: Any) -> dict[str, bool]:
    """Each option of ``cmd`` and whether it takes a value."""
    return {
        opt: not (getattr(p, "is_flag", False) or getattr(p, "count", False))
        for p in cmd.params
        for opt in (*p.opts, *p.secondary_opts)
        if opt.startswith("-")
    }


def check(args: str) -> str | None:
    """What is wrong with ``assay ARGS``, or None."""
    root = command()
    ctx = root.make_context("assay", ["--help"], resilient_parsing=True)
    cmd, path = root, ["assay"]
    allowed = _options(root)
    try:
        words = shlex.split(args)
    except ValueError as exc:
        return f"cannot be split as a shell line: {exc}"
    skip_value = False
    for word in words:
        if skip_value:
            skip_value = False
            continue
        if word == "--":
            return None  # what follows goes to another program
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            if name in ("-h", "--help"):
                continue
            if name not in allowed:
                return f"{' '.join(path)} has no option {name}"
            skip_value = allowed[name] and "=" not in word
            continue
        if not hasattr(cmd, "list_commands"):
            continue  # an argument of the command
        sub = cmd.get_command(ctx, word)
        if sub is None:
            return f"{' '.join(path)} has no command {word!r}"
        cmd, path = sub, [*path, word]
        ctx = type(ctx)(sub, info_name=word, parent=ctx)
        allowed = {**_options(sub), **_options(root)}
    return None


CASES = list(shown_commands())


def test_the_docs_show_assay_commands() -> None:
    assert len(CASES) > 40, "the pattern no longer finds the docs' commands"


@pytest.mark.parametrize(("where", "args"), CASES, ids=[w for w, _ in CASES])
def test_each_command_in_the_docs_exists_with_the_options_it_shows(where: str, args: str) -> None:
    problem = check(args)
    assert problem is None, f"{where}: assay {args}: {problem}"


def test_the_check_finds_a_misspelt_command_or_option() -> None:
    assert check("experiment craete c.yaml .") == "assay experiment has no command 'craete'"
    assert check("up --prot 9000") == "assay up has no option --prot"
    assert check("master --config master.yaml --check-upgrade") is None
    assert check("master backup /backups/") is None
