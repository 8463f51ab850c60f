"""An NNI config submitted as written (the web UI sends it so): read on the master against the
uploaded directory, as the CLI reads it against the directory holding the config file.

The uploaded archive is then the config's directory: ``searchSpaceFile`` is read from it, and
the context the trials get is its ``trialCodeDirectory`` (``.``, the whole archive, by default).
A path that leads out of the archive is refused, so nothing outside it is ever read.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import (
    InvalidConfig,
    nni_context,
    nni_files,
    nni_format,
    parse_yaml,
    read_nni_config,
)
from assay.context import extract_archive, pack_context
from assay.errors import ErrorDetail
from assay.master.experiments._submit import Submission


@dataclass(frozen=True)
class ReadSubmission:
    """A submission as the master validates it, and what its config was written for."""

    submission: Submission

    @property
    def source(self) -> rest.ConfigSource:
        """How the config as written was read."""
        return self.submission.source


def read_submission(sub: Submission) -> ReadSubmission:
    """``sub`` unchanged when its config is assay's (Determined's); an NNI config mapped onto
    the assay config it stands for, with its context cut to the trial code directory.

    ``sub.context`` empty (a validation without an upload) reads an NNI config against an empty
    directory, so a search space file it names is reported missing at its key.
    Raises :class:`InvalidConfig` with every problem, each at the NNI key written."""
    raw: Any = parse_yaml(sub.config_text, "<config>")
    fmt = nni_format(raw)
    if fmt is None:
        return ReadSubmission(replace(sub, source=_source_as_written(sub)))
    with tempfile.TemporaryDirectory(prefix="assay-nni-") as tmp:
        root = Path(tmp, "context")
        if sub.context:
            extract_archive(sub.context, root)
        else:
            root.mkdir()
        real = root.resolve()
        outside = [
            ErrorDetail(key, f"{path!r} leads out of the uploaded directory; name a path inside it")
            for key, path, resolved in nni_files(raw, real)
            if not resolved.is_relative_to(real)
        ]
        if outside:
            noun = "problem" if len(outside) == 1 else "problems"
            raise InvalidConfig(f"invalid NNI config: {len(outside)} {noun}", outside)
        mapped, notes = read_nni_config(raw, real)
        code_dir = nni_context(raw, real)
        context = sub.context if code_dir == real or not sub.context else _pack(code_dir)
    return ReadSubmission(
        replace(
            sub,
            config_text=json.dumps(mapped, indent=2),
            original_text=sub.original_text or sub.config_text,
            context=context,
            notes=(f"read as an NNI {fmt} config", *notes, *sub.notes),
            source=rest.ConfigSource(f"nni-{fmt}"),
        ),
    )


def _source_as_written(sub: Submission) -> rest.ConfigSource:
    """How an assay config's author wrote it: an NNI config a client read and translated
    comes with its text as written (``original_text``), which tells; else as ``sub`` says."""
    if not sub.original_text:
        return sub.source
    try:
        fmt = nni_format(parse_yaml(sub.original_text, "<original config>"))
    except InvalidConfig:
        return sub.source
    return rest.ConfigSource(f"nni-{fmt}") if fmt is not None else sub.source


def _pack(directory: Path) -> bytes:
    return pack_context(directory).data
