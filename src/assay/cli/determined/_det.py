"""Determined's ``det`` command lines as ``assay``'s: the table, and det's own options
before the command (the master's address, the user)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assay.cli._words import (
    ALL,
    CSV,
    FOLLOW,
    JSON,
    LOG_LINES,
    MANY,
    ONE,
    Flag,
    Rule,
    Tool,
    Translation,
    translate_words,
)

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


_STARTS = {
    "--config": Flag("--config", value=True),
    "--config-file": Flag("--config-file", value=True),
    "--context": Flag("--context", value=True),
    "-c": Flag("--context", value=True),
    "--detach": Flag("--detach"),
    "-d": Flag("--detach"),
}
"""What ``det notebook start`` and ``det shell start`` take."""


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
    Rule(
        (("notebook",), ("start",)),
        ("notebook", "start"),
        flags={
            **_STARTS,
            "--no-browser": Flag("--no-browser"),
        },
    ),
    Rule(
        (("shell",), ("start",)),
        ("shell", "start"),
        positionals=(0, MANY),
        remainder=True,
        flags=dict(_STARTS),
    ),
    Rule((("shell",), ("open",)), ("shell", "open"), positionals=(1, MANY), remainder=True),
    Rule(
        (("shell",), ("show_ssh_command", "show-ssh-command")),
        ("shell", "show-ssh-command"),
        positionals=ONE,
    ),
    Rule((("notebook",), ("open",)), ("notebook", "open"), positionals=ONE),
    *(
        Rule(((noun,), ("list", "ls")), (noun, "list"), flags={**ALL, **JSON})
        for noun in ("notebook", "shell")
    ),
    *(
        Rule(((noun,), ("logs",)), (noun, "logs"), positionals=ONE, flags=dict(FOLLOW))
        for noun in ("notebook", "shell")
    ),
    *(
        Rule(((noun,), ("kill",)), (noun, "kill"), positionals=ONE)
        for noun in ("notebook", "shell")
    ),
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

DET_NOUNS = {
    "experiment": "experiment", "e": "experiment", "trial": "trial", "t": "trial",
    "command": "cmd", "cmd": "cmd", "task": "task", "job": "job", "j": "job",
    "user": "user", "u": "user", "checkpoint": "checkpoint", "model": "model", "m": "model",
    "c": "checkpoint", "agent": "agent", "a": "agent", "master": "master",
    "slot": "slot", "s": "slot", "resource-pool": "resource-pool", "rp": "resource-pool",
    "notebook": "notebook", "shell": "shell", "tensorboard": "tensorboard",
}  # fmt: skip

DET = Tool("det", DET_RULES, DET_NOUNS)


def _address(master: str) -> str:
    """Determined takes ``host:port`` for the master; assay a URL."""
    return master if "://" in master else f"http://{master}"


def translate_det(args: Sequence[str], env: Mapping[str, str] | None = None) -> Translation:
    """``args`` typed after ``det``, as ``assay`` arguments (``DET_MASTER`` from ``env``)."""
    env = env or {}
    front: list[str] = []
    notes: list[str] = []
    rest = list(args)
    # det's options before the command: the master's address, the user.
    while rest and rest[0].startswith("-"):
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
    if not front and env.get("DET_MASTER"):
        front = ["-m", _address(env["DET_MASTER"])]
    if not rest or rest[0] in ("-h", "--help"):
        return Translation([*front, "--help"], notes)
    return translate_words(DET, rest, front, notes)
