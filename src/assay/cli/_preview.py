"""``assay preview-search``: what a searcher would do, without running anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from assay.cli._common import console, err_console, print_json


def preview(
    config_file: Annotated[
        Path, typer.Argument(help="experiment config (YAML): assay's, or NNI's (v2 or v1)")
    ],
    config: Annotated[
        list[str] | None, typer.Option("--config", help="override: key.path=value (repeatable)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="seed (default: the config's, else 0)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    max_grid_points: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="refuse a grid of more points, as a master with this limits.max_grid_points "
            "would (default: a master's default)",
        ),
    ] = None,
) -> None:
    """Simulate the searcher with made-up metrics: trials, rungs, lengths, total compute."""
    # The searchers (Optuna, numpy) load only for this command.
    from assay.cli._config_read import read_experiment_config
    from assay.config import DEFAULT_MAX_GRID_POINTS, load_experiment_config
    from assay.searcher import preview_search

    # Read as `experiment create` reads it: an NNI config is previewed as the searcher it
    # maps onto.
    read = read_experiment_config(config_file)
    for note in read.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    cfg = load_experiment_config(
        read.raw,
        overrides=tuple(config or ()),
        max_grid_points=max_grid_points or DEFAULT_MAX_GRID_POINTS,
    )
    chosen = seed if seed is not None else (cfg.reproducibility.experiment_seed or 0)
    result = preview_search(cfg, chosen)
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    console.print(result.render(), highlight=False, markup=False)
