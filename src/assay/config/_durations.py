"""Time limits written as NNI writes them (``30s``, ``10m``, ``1.5h``, ``2d``) or as seconds, and
the ``adaptdl`` section (the trial block of NNI's AdaptDL platform)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from assay.config._base import ConfigModel, Problem, config_error, show
from assay.config._limits import DB_INT_MAX, MAX_NAME, MAX_PATH
from assay.errors import ErrorDetail

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)\s*$", re.IGNORECASE)
MAX_DURATION_SECONDS = float(DB_INT_MAX)
"""The longest limit (about 68 years): the master stores seconds in an integer column."""


def parse_duration(value: str | int | float) -> float:
    """Seconds in ``value``: a number of seconds, or a string such as ``"30s"``, ``"10m"``,
    ``"1.5h"``, ``"2d"`` (a bare number in a string is seconds).

    Raises ``ValueError`` with a one-line message; the value must be above zero.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(
            f'must be a duration such as "30s", "10m", "1h", "2d" or a number of seconds, '
            f"got {show(value)}"
        )
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(
                "must be a number of seconds, or a number followed by s, m, h or d (such as "
                f'"90", "30s", "10m", "1h", "2d"), got {show(value)}'
            )
        seconds = float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"must be a duration above zero, got {show(value)}")
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(
            f"must be at most {int(MAX_DURATION_SECONDS)} seconds (about 68 years), "
            f"got {show(value)}"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest exact NNI-style form of ``seconds``: ``90`` -> ``"90s"``, ``3600`` ->
    ``"1h"``, ``5400`` -> ``"90m"``; a fraction of a second keeps its decimals."""
    for unit in ("d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and (seconds / size).is_integer():
            return f"{int(seconds / size)}{unit}"
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds:g}s"


def _duration_input(value: Any) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise config_error(str(exc)) from None


Duration = Annotated[float, BeforeValidator(_duration_input)]
"""A time limit in seconds, written as a number of seconds or ``"30s"``/``"10m"``/``"1h"``/
``"2d"``."""

_Text = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
_Path = Annotated[str, Field(min_length=1, max_length=MAX_PATH)]


class ImagePullSecret(ConfigModel):
    name: _Text


class AdaptDLCheckpoint(ConfigModel):
    """The persistent volume AdaptDL keeps a trial's checkpoints in; assay keeps the directory
    on the agent's storage, so the class and size are recorded only."""

    storage_class: _Text | None = None
    storage_size: _Text | None = None


class AdaptDLNfs(ConfigModel):
    """An NFS export AdaptDL mounts into every trial at ``container_mount_path``.

    assay mounts no NFS export, so a submission with one is refused
    (:func:`adaptdl_nfs_problem`), as OpenPAI's ``teamwise_storage`` plugin is; the section is
    still read, so that an experiment stored before that refusal loads.
    """

    server: _Text
    path: _Path
    container_mount_path: _Path

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        for key in ("path", "container_mount_path"):
            value = data.get(key)
            if isinstance(value, str) and not value.startswith("/"):
                problems.append(((key,), f"must be an absolute path, got {show(value)}"))
        return problems


class AdaptDLConfig(ConfigModel):
    """The trial block of NNI's AdaptDL platform (``trainingServicePlatform: adl``).

    Every trial of the experiment gets ``ADAPTDL_CHECKPOINT_PATH``, ``ADAPTDL_SHARE_PATH`` and
    ``ADAPTDL_TENSORBOARD_LOGDIR``. ``image`` and ``image_pull_secrets`` are recorded (trials run
    in the agent's own environment until a container runtime is configured); ``adaptive`` is
    recorded and the trial keeps the slots it was given.
    """

    image: _Path | None = None
    image_pull_secrets: list[ImagePullSecret] = []
    adaptive: bool = False
    checkpoint: AdaptDLCheckpoint | None = None
    nfs: AdaptDLNfs | None = None


def adaptdl_nfs_problem(adaptdl: Any) -> ErrorDetail | None:
    """The refusal of an ``adaptdl.nfs`` section at submission (None without one): AdaptDL
    mounts the export into each trial, assay mounts nothing, so every trial would fail at its
    start on an agent without the mount, or run without the files where it has none."""
    nfs = adaptdl.get("nfs") if isinstance(adaptdl, dict) else None
    if nfs is None:
        return None
    fields = nfs if isinstance(nfs, dict) else {}
    server, path = fields.get("server"), fields.get("path")
    export = f" {server}:{path}" if isinstance(server, str) and isinstance(path, str) else ""
    mount = fields.get("container_mount_path")
    at = f" at {mount}" if isinstance(mount, str) and mount else ""
    return ErrorDetail(
        "adaptdl.nfs",
        f"AdaptDL mounts the NFS export{export} into each trial{at}, and assay mounts no NFS "
        f"export: mount it{at or ' at the same path'} on every agent's host and remove nfs",
    )
