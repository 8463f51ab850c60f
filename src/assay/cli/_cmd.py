"""``assay cmd run``: a one-off command on a slot (or none), with a context directory, as
Determined's ``det cmd run`` does; its output is followed to the end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="the command and its arguments (default: the config's entrypoint)"),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="KEY=VALUE of the command config, e.g. resources.slots=0"),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config-file", help="a Determined command config (YAML)")
    ] = None,
    context_dir: Annotated[
        Path | None, typer.Option("--context", "-c", help="directory to upload and run in")
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="print its id and return at once")
    ] = False,
) -> None:
    """Run COMMAND on one slot (`--config resources.slots=0` for none) and follow its output;
    without COMMAND, the --config-file's entrypoint. Put `--` before the command when it has
    options of its own."""
    import yaml

    from assay.cli._common import fail, read_config_file
    from assay.cli._jobrun import read_yaml, submit

    raw: dict[str, object] = {}
    if config_file is not None:
        loaded = read_yaml(read_config_file(config_file), config_file) or {}
        if not isinstance(loaded, dict):
            fail(
                f"{config_file}: a command config is a mapping of keys, got {type(loaded).__name__}"
            )
        raw.update(loaded)
    if command:
        raw["entrypoint"] = list(command)
    elif not raw.get("entrypoint"):
        where = f"{config_file} has no entrypoint" if config_file else "no command was given"
        fail(
            f"nothing to run: {where}; give the command (assay cmd run -- python3 train.py) "
            "or a --config-file with an entrypoint"
        )
    text = yaml.safe_dump(raw, sort_keys=False)
    submit(
        text,
        kind="command",
        context_dir=context_dir,
        overrides=tuple(config or ()),
        follow=not detach,
        quiet_notes=False,
    )
