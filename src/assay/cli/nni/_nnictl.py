"""NNI's ``nnictl`` command lines as ``assay``'s: the table."""

from __future__ import annotations

from collections.abc import Sequence

from assay.cli._words import ONE, Flag, Rule, Tool, Translation, translate_words


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

NNICTL_NOUNS = {
    "experiment": "nni experiment",
    "trial": "nni trial",
    "log": "trial logs",
    "top": "experiment list",
    "webui": "nni view",
    "update": "experiment set",
    "tensorboard": "tensorboard",
}

NNICTL = Tool("nnictl", NNICTL_RULES, NNICTL_NOUNS)


def translate_nnictl(args: Sequence[str]) -> Translation:
    """``args`` typed after ``nnictl``, as ``assay`` arguments."""
    rest = list(args)
    if not rest or rest[0] in ("-h", "--help"):
        return Translation(["nni", "--help"], [])
    return translate_words(NNICTL, rest, [], [])
