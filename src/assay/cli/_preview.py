"""``assay preview-search``: what a searcher would do, without running anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from assay.cli._common import console, fail, print_json


def preview(
    config_file: Annotated[Path, typer.Argument(help="experiment config (YAML)")],
    config: Annotated[
        list[str] | None, typer.Option("--config", help="override: key.path=value (repeatable)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="seed (default: the config's, else 0)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Simulate the searcher with made-up metrics: trials, rungs, lengths, total compute."""
    # The searchers (Optuna, numpy) load only for this command.
    from assay.config import load_experiment_config, parse_yaml
    from assay.searcher import preview_search

    try:
        text = config_file.read_text()
    except OSError as exc:
        fail(f"cannot read config file {config_file}: {exc.strerror}")
    cfg = load_experiment_config(parse_yaml(text, str(config_file)), overrides=tuple(config or ()))
    chosen = seed if seed is not None else (cfg.reproducibility.experiment_seed or 0)
    result = preview_search(cfg, chosen)
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    console.print(result.render(), highlight=False, markup=False)
