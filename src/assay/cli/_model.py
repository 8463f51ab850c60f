"""``assay model``: the model registry. A model is a name with versions, each one checkpoint;
garbage collection never deletes a checkpoint a version holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    CsvOption,
    JsonOption,
    check_formats,
    client,
    console,
    err_console,
    esc,
    listing_table,
    print_json,
    print_table,
    when,
)

if TYPE_CHECKING:
    from assay import rest

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

NameArg = Annotated[str, typer.Argument(help="the model's name")]
VersionOption = Annotated[int | None, typer.Option("--version", "-v", min=1, help="version N")]


@app.command()
def create(
    name: NameArg,
    description: Annotated[str, typer.Option("--description", "-d", help="what it is")] = "",
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="a label (repeat for more)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a model (without versions yet)."""
    model = client().create_model(name, description=description, labels=label or [])
    if as_json:
        print_json(model)
    else:
        console.print(f"created model {esc(model.name)}", highlight=False)


@app.command("register-version")
def register_version(
    name: NameArg,
    uuid: Annotated[str, typer.Argument(help="the checkpoint's uuid")],
    version_name: Annotated[str, typer.Option("--name", help="a name for the version")] = "",
    comment: Annotated[str, typer.Option("--comment", help="a comment on the version")] = "",
    as_json: JsonOption = False,
) -> None:
    """Register a checkpoint as the model's next version; it is then never garbage-collected
    while the version exists."""
    version = client().register_version(name, uuid, version_name=version_name, comment=comment)
    if as_json:
        print_json(version)
        return
    console.print(
        f"registered checkpoint {version.checkpoint.uuid} as {esc(version.model)} "
        f"v{version.version}",
        highlight=False,
    )


@app.command("list")
def list_(
    name: Annotated[
        str | None, typer.Option("--name", "-n", help="only names containing this")
    ] = None,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """The models, by name."""
    check_formats(as_json, as_csv)
    c = client()
    models: list[rest.Model] = []
    while True:
        page = c.models(name=name, limit=1000, offset=len(models))
        models += page.models
        if not page.models or len(models) >= page.pagination.total:
            break
    if as_json:
        print_json(models)
        return
    table = listing_table(
        "Name", "Versions", "Latest", "Owner", "Updated", "Description", empty="No models."
    )
    for m in models:
        table.add_row(
            esc(m.name),
            str(m.versions),
            "" if m.latest_version is None else f"v{m.latest_version}",
            esc(m.owner),
            when(m.updated_at),
            esc(m.description),
        )
    print_table(table, as_csv)


@app.command()
def describe(
    name: NameArg,
    version: VersionOption = None,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """The model and its versions (or, with --version, that version and its checkpoint)."""
    check_formats(as_json, as_csv)
    c = client()
    if version is not None:
        one = c.model_version(name, version)
        if as_json:
            print_json(one)
        else:
            _print_version(one)
        return
    listed = c.model_versions(name)
    if as_json:
        print_json(listed)
        return
    if not as_csv:
        m = listed.model
        console.print(f"model {esc(m.name)} (owner {esc(m.owner)})", highlight=False)
        if m.description:
            console.print(f"  {esc(m.description)}", highlight=False)
        if m.labels:
            console.print(f"  labels: {esc(', '.join(m.labels))}", highlight=False)
        if not listed.versions:
            console.print(f"no versions yet: `assay model register-version {esc(m.name)} UUID`")
            return
    table = listing_table(
        "Version",
        "Checkpoint",
        "Experiment",
        "Trial",
        "Steps",
        "State",
        "Registered",
        "Name",
        empty="No versions.",
    )
    for v in listed.versions:
        ck = v.checkpoint
        table.add_row(
            str(v.version),
            ck.uuid,
            str(ck.experiment_id),
            str(ck.trial_id),
            str(ck.steps_completed),
            ck.state,
            when(v.created_at),
            esc(v.name),
        )
    print_table(table, as_csv)


def _print_version(v: rest.ModelVersion) -> None:
    from assay.context import format_size

    ck = v.checkpoint
    lines = [
        f"{v.model} v{v.version}" + (f" ({v.name})" if v.name else ""),
        f"  registered {when(v.created_at)} by {v.owner}",
        f"  checkpoint {ck.uuid}: experiment {ck.experiment_id}, trial {ck.trial_id}, "
        f"step {ck.steps_completed}, {format_size(ck.size)}, {ck.state}",
    ]
    if v.comment:
        lines.append(f"  comment: {v.comment}")
    for line in lines:
        console.print(line, markup=False, highlight=False)


@app.command()
def download(
    name: NameArg,
    version: Annotated[int, typer.Option("--version", "-v", min=1, help="version N")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="directory to write it to (default: checkpoints/UUID)"),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="print only the directory written")
    ] = False,
) -> None:
    """Download the checkpoint of version N of the model through the master."""
    from assay.cli._checkpoint import fetch

    c = client()
    ckpt = c.model_version(name, version).checkpoint
    dest = output if output is not None else Path("checkpoints") / ckpt.uuid
    fetch(c, ckpt, dest, quiet)


@app.command()
def delete(
    name: NameArg,
    version: VersionOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask first")] = False,
) -> None:
    """Delete the model and all its versions (or, with --version, that version). Their
    checkpoints stay; a later `assay experiment set gc-policy` may collect them. Asks first
    unless --yes."""
    from assay.cli._experiment_lifecycle import confirmed, count

    c = client()
    if version is not None:
        c.model_version(name, version)  # a missing one is named before anything is asked
        question = f"Delete {name} v{version}? [y/N] "
    else:
        model = c.model(name)
        question = f"Delete model {name} and its {count(model.versions, 'version')}? [y/N] "
    if not yes and not confirmed(question):
        err_console.print("nothing deleted", highlight=False)
        raise typer.Exit(1)
    if version is not None:
        gone = c.delete_model_version(name, version)
        console.print(
            f"deleted {esc(name)} v{version}; checkpoint {gone.checkpoint.uuid} stays",
            highlight=False,
        )
        return
    deleted = c.delete_model(name)
    console.print(
        f"deleted model {esc(deleted.name)} and its {count(deleted.versions, 'version')}; "
        "their checkpoints stay",
        highlight=False,
    )
