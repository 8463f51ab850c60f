"""Telling which system a config file was written for, by its keys alone.

Kept apart from the readers so that the experiment config loader can refuse a job file (and
the job file reader an experiment config) without either importing the other.
"""

from __future__ import annotations

from typing import Any

from assay.errors import InvalidConfig


def job_format(raw: Any) -> str | None:
    """``openpai-v2``, ``openpai-v1`` or ``determined`` as the keys of ``raw`` say; None when
    they say none of these."""
    if not isinstance(raw, dict):
        return None
    roles = raw.get("taskRoles")
    if "protocolVersion" in raw or isinstance(roles, dict):
        return "openpai-v2"
    if "jobName" in raw or isinstance(roles, list):
        return "openpai-v1"
    if "entrypoint" in raw:
        return "determined"
    return None


class NotAnExperimentConfig(InvalidConfig):
    """Raised for a file that is plainly a job file (an OpenPAI job), not an experiment
    config: one line that says what to do with it beats a problem for each of its keys."""


def refuse_job_file(raw: Any, source: str = "") -> None:
    """Raise :class:`NotAnExperimentConfig` when ``raw`` is an OpenPAI job (``source``: the file
    name for the message; without it, "this config")."""
    if job_format(raw) not in ("openpai-v2", "openpai-v1"):
        return
    name = source or "<file>"
    raise NotAnExperimentConfig(
        f"{source or 'this config'} is an OpenPAI job, not an experiment config: "
        f"submit it with `assay job submit {name}`"
    )
