"""Determined's ``det`` and NNI's ``nnictl`` command lines translated to ``assay``'s.

A pure, table-driven function of the words typed (and the environment, for ``DET_MASTER``):
one :class:`Rule` per command says which ``assay`` command it becomes, how many positional
arguments it takes and what becomes of each of its flags. What is not in a table is refused in
one line naming the closest ``assay`` command, never guessed at.
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

_EXP = ("experiment", "e")
_TRIAL = ("trial", "t")
_CKPT = ("checkpoint", "c")
# det's downloads: where to, and whether to print only the path.
DOWNLOAD_TO = {
    "--output-dir": Flag("--output-dir", value=True),
    "-o": Flag("--output-dir", value=True),
    "--quiet": Flag("--quiet"),
    "-q": Flag("--quiet"),
}
RANKED_BY_SEARCHER = {
    flag: Flag(
        None,
        value=True,
        refuse=True,
        note="assay ranks checkpoints by the searcher's metric and smaller_is_better",
    )
    for flag in ("--sort-by", "--smaller-is-better")
}


def _exp(verb: tuple[str, ...], assay_verb: str, **kw: object) -> Rule:
    return Rule((_EXP, verb), ("experiment", assay_verb), **kw)  # type: ignore[arg-type]


DET_RULES: tuple[Rule, ...] = (
    _exp(
        ("create",),
        "create",
        positionals=(2, 2),
        flags={
            "--local": Flag("--local"),
            "--test-mode": Flag("--test-mode"),
            "--paused": Flag("--paused"),
            "--config": Flag("--config", value=True),
            "--follow-first-trial": Flag("--follow"),
            "-f": Flag("--follow"),
            "--template": Flag(
                None,
                value=True,
                refuse=True,
                note="assay has no templates: merge it into the config",
            ),
            "--project-id": Flag(
                None, value=True, note="assay has no projects; --project-id ignored"
            ),
            "--include": Flag(
                None, value=True, refuse=True, note="put the files in the context directory"
            ),
            "-i": Flag(
                None, value=True, refuse=True, note="put the files in the context directory"
            ),
        },
    ),
    _exp(
        ("list", "ls"),
        "list",
        flags={**ALL, **JSON, "--limit": Flag("--limit", value=True)},
    ),
    _exp(("describe",), "describe", positionals=ONE, flags=dict(JSON)),
    _exp(("list-trials", "lt"), "list-trials", positionals=ONE, flags=dict(JSON)),
    _exp(
        ("list-checkpoints", "lc"),
        "list-checkpoints",
        positionals=ONE,
        flags={**JSON, "--best": Flag("--best", value=True)},
    ),
    _exp(("config",), "config", positionals=ONE),
    _exp(("logs",), "logs", positionals=ONE, flags=dict(LOG_LINES)),
    _exp(("wait",), "wait", positionals=ONE),
    *(_exp((verb,), verb, positionals=ONE) for verb in ("kill", "pause", "activate", "cancel")),
    *(_exp((verb,), verb, positionals=ONE) for verb in ("archive", "unarchive")),
    Rule(
        (_EXP, ("set",), ("gc-policy",)),
        ("experiment", "set", "gc-policy"),
        positionals=ONE,
        flags={
            **{
                f"--{name}": Flag(f"--{name}", value=True)
                for name in ("save-experiment-best", "save-trial-best", "save-trial-latest")
            },
            "--yes": Flag("--yes"),
            "-y": Flag("--yes"),
        },
    ),
    *(
        Rule((_EXP, ("set",), (what,)), ("experiment", "set", what), positionals=(2, 2))
        for what in ("priority", "weight", "max-slots")
    ),
    _exp(
        ("delete",), "delete", positionals=ONE, flags={"--yes": Flag("--yes"), "-y": Flag("--yes")}
    ),
    _exp(
        ("continue",),
        "continue",
        positionals=ONE,
        flags={
            "--config": Flag("--config", value=True),
            "--trial": Flag("--trial", value=True),
            "--follow-first-trial": Flag("--follow"),
            "-f": Flag("--follow"),
            "--config-file": Flag(
                None,
                value=True,
                refuse=True,
                note="continue takes the experiment's own config; change it with --config K=V",
            ),
        },
    ),
    Rule((_TRIAL, ("logs",)), ("trial", "logs"), positionals=ONE, flags=dict(LOG_LINES)),
    Rule(
        (_TRIAL, ("describe",)),
        ("trial", "describe"),
        positionals=ONE,
        flags={**JSON, "--metrics": Flag("--metrics"), "--csv": Flag("--csv")},
    ),
    Rule((_TRIAL, ("kill",)), ("trial", "kill"), positionals=ONE),
    Rule(
        (_TRIAL, ("download",)),
        ("trial", "download"),
        positionals=ONE,
        flags={
            "--best": Flag("--best"),
            "--latest": Flag("--latest"),
            "--uuid": Flag(
                None, value=True, refuse=True, note="use `assay checkpoint download UUID`"
            ),
            **DOWNLOAD_TO,
            **RANKED_BY_SEARCHER,
        },
    ),
    _exp(
        ("download",),
        "download",
        positionals=ONE,
        flags={"--top-n": Flag("--top-n", value=True), **DOWNLOAD_TO, **RANKED_BY_SEARCHER},
    ),
    Rule((_CKPT, ("describe",)), ("checkpoint", "describe"), positionals=ONE, flags=dict(JSON)),
    Rule(
        (_CKPT, ("download",)),
        ("checkpoint", "download"),
        positionals=ONE,
        flags={
            **DOWNLOAD_TO,
            "--mode": Flag(
                None, value=True, note="--mode ignored: assay downloads through the master"
            ),
        },
    ),
    Rule(
        (_CKPT, ("delete",)),
        ("checkpoint", "delete"),
        positionals=(1, MANY),
        flags={"--yes": Flag("--yes"), "-y": Flag("--yes")},
    ),
    Rule(
        (_CKPT, ("list", "ls")),
        ("experiment", "list-checkpoints"),
        positionals=ONE,
        flags={**JSON, **CSV, "--best": Flag("--best", value=True)},
    ),
    Rule(
        (("model", "m"), ("create",)),
        ("model", "create"),
        positionals=ONE,
        flags={
            "--description": Flag("--description", value=True),
            "-d": Flag("--description", value=True),
            "--label": Flag("--label", value=True),
            "-l": Flag("--label", value=True),
        },
    ),
    Rule((("model", "m"), ("list", "ls")), ("model", "list"), flags={**JSON, **CSV}),
    Rule((("model", "m"), ("describe",)), ("model", "describe"), positionals=ONE, flags=dict(JSON)),
    Rule(
        (("model", "m"), ("list-versions",)),
        ("model", "describe"),
        positionals=ONE,
        flags=dict(JSON),
    ),
    Rule(
        (("model", "m"), ("register-version",)),
        ("model", "register-version"),
        positionals=(2, 2),
    ),
    Rule(
        (("model", "m"), ("delete",)),
        ("model", "delete"),
        positionals=ONE,
        flags={"--yes": Flag("--yes"), "-y": Flag("--yes")},
    ),
    Rule(
        (("tensorboard",), ("start",)),
        ("tensorboard", "start"),
        positionals=(1, 1),
        flags={
            "--trial-ids": Flag("-t", value=True),
            "-t": Flag("-t", value=True),
            "--detach": Flag("--detach"),
            "-d": Flag("--detach"),
            "--no-browser": Flag(None, note="--no-browser ignored: assay prints the URL"),
        },
    ),
    Rule((("tensorboard",), ("list", "ls")), ("tensorboard", "list"), flags={**JSON, **ALL}),
    Rule((("tensorboard",), ("kill",)), ("tensorboard", "kill"), positionals=ONE),
    Rule(
        (("command", "cmd"), ("run",)),
        ("cmd", "run"),
        positionals=(1, 1),
        remainder=True,
        flags={
            "--config": Flag("--config", value=True),
            "--config-file": Flag("--config-file", value=True),
            "--context": Flag("--context", value=True),
            "-c": Flag("--context", value=True),
            "--detach": Flag("--detach"),
            "-d": Flag("--detach"),
        },
    ),
    Rule((("command", "cmd"), ("list", "ls")), ("task", "list"), flags={**ALL, **JSON}),
    Rule((("task",), ("list", "ls")), ("task", "list"), flags={**ALL, **JSON}),
    Rule((("task",), ("logs",)), ("task", "logs"), positionals=ONE, flags=dict(LOG_LINES)),
    Rule(
        (("job", "j"), ("list", "ls")),
        ("job", "list"),
        flags={
            "--resource-pool": Flag("--resource-pool", value=True),
            "-p": Flag("--resource-pool", value=True),
            **JSON,
        },
    ),
    Rule(
        (("job", "j"), ("update",)),
        ("job", "update"),
        positionals=ONE,
        flags={
            f"--{name}": Flag(f"--{name}", value=True)
            for name in ("priority", "weight", "resource-pool", "ahead-of", "behind-of")
        },
    ),
    Rule((("job", "j"), ("update-batch",)), ("job", "update-batch"), positionals=(1, MANY)),
    Rule((("agent", "a"), ("list", "ls")), ("agent", "list"), flags={**JSON, **CSV}),
    Rule((("slot", "s"), ("list", "ls")), ("slot", "list"), flags={**JSON, **CSV}),
    Rule(
        (("resource-pool", "rp"), ("list", "ls")),
        ("resource-pool", "list"),
        flags={**JSON, **CSV},
    ),
    Rule((("master",), ("info",)), ("master", "info"), flags=dict(JSON)),
    Rule((("master",), ("config",)), ("master", "config"), flags=dict(JSON)),
    Rule(
        (("master",), ("logs",)),
        ("master", "logs"),
        flags={**FOLLOW, "--tail": Flag("--tail", value=True)},
    ),
    *(
        Rule((("user", "u"), (verb,)), ("user", verb), positionals=(0, 1))
        for verb in ("login", "logout", "whoami", "list", "activate", "deactivate")
    ),
    Rule((("user", "u"), ("change-password",)), ("user", "change-password"), positionals=(0, 1)),
)


def _nni(words: tuple[tuple[str, ...], ...], assay: tuple[str, ...], **kw: object) -> Rule:
    return Rule(words, ("nni", *assay), **kw)  # type: ignore[arg-type]


_PORT_DROPPED = Flag(
    None, value=True, note="--port ignored: assay's master serves every experiment at its URL"
)

NNICTL_RULES: tuple[Rule, ...] = (
    _nni(
        (("create",),),
        ("create",),
        flags={
            "--config": Flag("--config", value=True),
            "-c": Flag("--config", value=True),
            "--port": Flag("--port", value=True),
            "-p": Flag("--port", value=True),
            "--debug": Flag(None, note="--debug ignored: the master's log has it"),
            "-d": Flag(None, note="-d ignored: the master's log has it"),
            "--foreground": Flag(None, note="--foreground ignored: the master runs it"),
            "-f": Flag(None, note="-f ignored: the master runs it"),
        },
    ),
    *(
        _nni(((verb,),), (verb,), positionals=ONE, flags={"--port": _PORT_DROPPED})
        for verb in ("stop", "resume", "view")
    ),
    _nni(
        (("trial",), ("ls", "list")),
        ("trial", "ls"),
        positionals=ONE,
        flags={"--head": Flag("--head", value=True), "--tail": Flag("--tail", value=True)},
    ),
    Rule(
        (("trial",), ("kill",)),
        refuse="`nnictl trial kill` is `assay trial kill TRIAL_ID` (assay's trial ids are numbers)",
    ),
    _nni((("experiment",), ("list", "ls")), ("experiment", "list"), flags={"--all": Flag("--all")}),
    _nni(
        (("experiment",), ("export",)),
        ("experiment", "export"),
        positionals=ONE,
        flags={
            "--type": Flag("--type", value=True),
            "-t": Flag("--type", value=True),
            "--filename": Flag("--filename", value=True),
            "-f": Flag("--filename", value=True),
            "--intermediate": Flag(None, note="--intermediate ignored"),
            "-i": Flag(None, note="-i ignored"),
        },
    ),
    _nni((("experiment",), ("show", "status")), ("view",), positionals=ONE),
)

# Where a refused command's closest assay command comes from: the other tool's noun -> assay's.
_DET_NOUNS = {
    "experiment": "experiment", "e": "experiment", "trial": "trial", "t": "trial",
    "command": "cmd", "cmd": "cmd", "task": "task", "job": "job", "j": "job",
    "user": "user", "u": "user", "checkpoint": "checkpoint", "model": "model", "m": "model",
    "c": "checkpoint", "agent": "agent", "a": "agent", "master": "master",
    "slot": "slot", "s": "slot", "resource-pool": "resource-pool", "rp": "resource-pool",
    "notebook": "cmd run", "shell": "cmd run", "tensorboard": "tensorboard",
}  # fmt: skip
_NNI_NOUNS = {
    "experiment": "nni experiment",
    "trial": "nni trial",
    "log": "trial logs",
    "top": "experiment list",
    "webui": "nni view",
    "update": "experiment set",
    "tensorboard": "tensorboard",
}


def _closest(tool: str, words: Sequence[str], rules: Sequence[Rule]) -> str:
    nouns = _DET_NOUNS if tool == "det" else _NNI_NOUNS
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
    return f"`{tool} {typed}` has no assay equivalent; the closest: `assay {target}`"


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


def _address(master: str) -> str:
    """Determined takes ``host:port`` for the master; assay a URL."""
    return master if "://" in master else f"http://{master}"


def translate(tool: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> Translation:
    """``args`` typed after ``det`` (``tool="det"``) or ``nnictl``, as ``assay`` arguments."""
    env = env or {}
    rules = DET_RULES if tool == "det" else NNICTL_RULES
    front: list[str] = []
    notes: list[str] = []
    rest = list(args)
    # det's options before the command: the master's address, the user.
    while tool == "det" and rest and rest[0].startswith("-"):
        opt, _, inline = rest.pop(0).partition("=")
        if opt in ("-m", "--master"):
            if not inline and not rest:
                return Translation(None, [], f"{opt} needs the master's address")
            front += ["-m", _address(inline or rest.pop(0))]
        elif opt in ("-u", "--user"):
            if not inline and rest:
                rest.pop(0)
            notes.append(f"{opt} ignored: assay uses the session of `assay user login USER`")
        elif opt in ("-h", "--help"):
            return Translation(["--help"], notes)
        else:
            return Translation(None, [], f"det option {opt} is not mapped; see `assay --help`")
    if tool == "det" and not front and env.get("DET_MASTER"):
        front = ["-m", _address(env["DET_MASTER"])]
    if not rest or rest[0] in ("-h", "--help"):
        return Translation(
            [*front, "nni", "--help"] if tool == "nnictl" else [*front, "--help"], notes
        )
    matched = _match(rest, rules)
    if matched is None:
        return Translation(None, notes, _closest(tool, rest, rules))
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
        command = f"{tool} {' '.join(rest[:taken])}"
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
        command = f"{tool} {' '.join(rest[:taken])}"
        wanted = str(least) if least == most else f"{least} to {most}"
        return Translation(
            None, notes, f"{command} takes {wanted} argument(s), got {len(positionals)}"
        )
    if rule.remainder and positionals:
        positionals = ["--", *positionals]
    return Translation([*front, *rule.assay, *out_flags, *positionals], notes)
