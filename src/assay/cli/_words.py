"""Another tool's command lines translated to ``assay``'s: the machinery every table shares.

A pure, table-driven function of the words typed: one :class:`Rule` per command says which
``assay`` command it becomes, how many positional arguments it takes and what becomes of each
of its flags. What is not in a table is refused in one line naming the closest ``assay``
command, never guessed at. The tables live with their tool: Determined's ``det`` in
:mod:`assay.cli.determined`, NNI's ``nnictl`` in :mod:`assay.cli.nni`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Flag:
    """What one flag of the other tool becomes."""

    to: str | None
    """The ``assay`` flag; None drops it (``note`` says why)."""
    value: bool = False
    """It takes a value (``--limit 5`` or ``--limit=5``)."""
    note: str | None = None
    """Said on stderr when the flag is dropped, or the refusal when ``refuse``."""
    refuse: bool = False


@dataclass(frozen=True)
class Rule:
    words: tuple[tuple[str, ...], ...]
    """The command's words, each with its aliases: ``(("experiment", "e"), ("list",))``."""
    assay: tuple[str, ...] = ()
    """The ``assay`` command it becomes."""
    flags: Mapping[str, Flag] = field(default_factory=dict)
    positionals: tuple[int, int] = (0, 0)
    """At least and at most this many positional arguments."""
    remainder: bool = False
    """Everything after the first positional is a command line of its own (``det cmd run``)."""
    refuse: str | None = None
    """Not mapped: this line says so and what to use instead."""


@dataclass(frozen=True)
class Translation:
    argv: list[str] | None
    """The ``assay`` arguments; None when refused."""
    notes: list[str]
    """Flags dropped, said on stderr."""
    error: str | None = None


@dataclass(frozen=True)
class Tool:
    """One tool's table: its rules, and where a refused command's noun points in assay."""

    name: str
    rules: tuple[Rule, ...]
    nouns: Mapping[str, str]
    """The tool's noun -> the closest ``assay`` command, for a refusal's hint."""


JSON = {"--json": Flag("--json")}
ALL = {"--all": Flag("--all"), "-a": Flag("--all")}
FOLLOW = {"--follow": Flag("--follow"), "-f": Flag("--follow")}
CSV = {"--csv": Flag("--csv")}
# det's log commands: how much of the log and whether each line carries its time.
LOG_LINES = {
    **FOLLOW,
    "--head": Flag("--head", value=True),
    "--tail": Flag("--tail", value=True),
    "--timestamps": Flag("--timestamps"),
    "-t": Flag("--timestamps"),
}
ONE = (1, 1)
MANY = 10_000


def _closest(tool: Tool, words: Sequence[str]) -> str:
    rules, nouns = tool.rules, tool.nouns
    typed = " ".join(words[:2])
    same_noun = [r for r in rules if r.assay and words[0] in r.words[0] and len(r.words) > 1]
    verbs = {alias: r for r in same_noun for alias in r.words[1]}
    near = difflib.get_close_matches(words[1], list(verbs), n=1) if len(words) > 1 else []
    if near:
        target = " ".join(verbs[near[0]].assay)
    elif words[0] in nouns:
        target = nouns[words[0]]
    else:
        firsts = {alias: r for r in rules if r.assay for alias in r.words[0]}
        near = difflib.get_close_matches(words[0], list(firsts), n=1)
        target = " ".join(firsts[near[0]].assay) if near else "--help"
    return f"`{tool.name} {typed}` has no assay equivalent; the closest: `assay {target}`"


def _match(words: Sequence[str], rules: Sequence[Rule]) -> tuple[Rule, int] | None:
    """The rule whose words start ``words`` (the longest such), and how many words it took."""
    best: tuple[Rule, int] | None = None
    for rule in rules:
        n = len(rule.words)
        typed = words[:n]
        fits = len(typed) == n and all(
            w in aliases for w, aliases in zip(typed, rule.words, strict=True)
        )
        if fits and (best is None or n > best[1]):
            best = (rule, n)
    return best


def translate_words(tool: Tool, rest: list[str], front: list[str], notes: list[str]) -> Translation:
    """The words after ``tool``'s name (and after any options of its own, already read into
    ``front`` and ``notes``) as ``assay`` arguments."""
    matched = _match(rest, tool.rules)
    if matched is None:
        return Translation(None, notes, _closest(tool, rest))
    rule, taken = matched
    if rule.refuse is not None:
        return Translation(None, notes, rule.refuse)
    out_flags: list[str] = []
    positionals: list[str] = []
    tail = rest[taken:]
    i = 0
    while i < len(tail):
        word = tail[i]
        i += 1
        if rule.remainder and positionals:
            positionals.append(word)
            continue
        if word == "--":
            positionals += tail[i:]
            break
        if word in ("-h", "--help"):
            return Translation([*front, *rule.assay, "--help"], notes)
        if not word.startswith("-") or word == "-":
            positionals.append(word)
            continue
        name, eq, inline = word.partition("=")
        flag = rule.flags.get(name)
        command = f"{tool.name} {' '.join(rest[:taken])}"
        if flag is None:
            known = ", ".join(sorted(rule.flags)) or "none"
            return Translation(
                None, notes, f"{command}: {name} is not mapped (mapped flags: {known})"
            )
        value: str | None = None
        if flag.value:
            if eq:
                value = inline
            elif i < len(tail):
                value = tail[i]
                i += 1
            else:
                return Translation(None, notes, f"{command}: {name} needs a value")
        if flag.refuse:
            return Translation(None, notes, f"{command}: {name} is not supported: {flag.note}")
        if flag.to is None:
            notes.append(flag.note or f"{name} ignored")
            continue
        out_flags.append(flag.to)
        if value is not None:
            out_flags.append(value)
    least, most = rule.positionals
    count = 1 if rule.remainder and positionals else len(positionals)
    if count < least or (count > most and not rule.remainder):
        command = f"{tool.name} {' '.join(rest[:taken])}"
        wanted = str(least) if least == most else f"{least} to {most}"
        return Translation(
            None, notes, f"{command} takes {wanted} argument(s), got {len(positionals)}"
        )
    if rule.remainder and positionals:
        positionals = ["--", *positionals]
    return Translation([*front, *rule.assay, *out_flags, *positionals], notes)
