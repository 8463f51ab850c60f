"""Reading an experiment config file, whatever system wrote it: assay's (Determined's expconf)
or NNI's (v2, or v1), told by its keys. Shared by every command that submits an experiment."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.cli._common import read_config_file


@dataclass(frozen=True)
class ReadConfig:
    """A config as it goes to the master: ``text`` is what is submitted (an NNI config is sent
    as the assay config it maps onto), ``raw`` its data."""

    text: str
    raw: Any
    context: Path | None = None
    """The context directory the config names (NNI's trial code directory), if any."""
    notes: list[str] = field(default_factory=list)
    """Lines for the experiment's log: what was accepted with a caveat."""
    source: str = "assay"
    """``assay``, or ``nni-v2`` / ``nni-v1``."""
    original: str = ""
    """The file's text as written when ``text`` is its translation (an NNI config); empty
    otherwise. Sent along, so the experiment shows the config its author wrote."""


def read_experiment_config(path: Path) -> ReadConfig:
    """The config at ``path``; an NNI config is mapped (raising
    :class:`~assay.errors.InvalidConfig` for what cannot be honoured)."""
    from assay.config import nni_context, nni_format, parse_yaml, read_nni_config, refuse_job_file

    text = read_config_file(path)
    raw = parse_yaml(text, str(path))
    refuse_job_file(raw, str(path))
    fmt = nni_format(raw)
    if fmt is None:
        return ReadConfig(text, raw)
    base = path.resolve().parent
    mapped, notes = read_nni_config(raw, base)
    notes = [f"read as an NNI {fmt} config from {path.name}", *notes]
    return ReadConfig(
        json.dumps(mapped, indent=2), mapped, nni_context(raw, base), notes, f"nni-{fmt}", text
    )
