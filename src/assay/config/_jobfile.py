"""Reading a job file, whatever system it was written for, into a :class:`JobSpec`.

The format is told by its keys: OpenPAI's job protocol v2 (``protocolVersion``, ``taskRoles``
as a map), OpenPAI's older JSON (``jobName``, ``taskRoles`` as a list) and Determined's command
and generic-task configs (``entrypoint``). Each reader reports every problem at once, each with
its path (``taskRoles.worker.resourcePerInstance.gpu``).
"""

from __future__ import annotations

import json
from typing import Any

from assay.config._base import show
from assay.config._errors import invalid
from assay.config._formats import job_format
from assay.config._jobload import validated
from assay.config._jobspec import JobSpec, JobSpecKind
from assay.config._limits import MAX_CONFIG_BYTES
from assay.config._yaml import decode_config, parse_yaml
from assay.config.determined._task import load_task_config
from assay.config.openpai._v1 import OpenPaiJobV1, build_v1
from assay.config.openpai._v2 import OpenPaiJobV2, build_v2
from assay.errors import ErrorDetail, InvalidConfig

_FORMATS = (
    "an OpenPAI job (protocol v2) has protocolVersion and taskRoles as a map; an OpenPAI v1 job "
    "has jobName and taskRoles as a list; a Determined command or task config has entrypoint"
)


EMPTY_JOB_FILE = (
    "expected an OpenPAI job (protocol v2 YAML or v1 JSON) or a Determined command or task config"
)


def _parse(text: str | bytes, source: str) -> Any:
    """The data of YAML or JSON text. JSON is YAML, except that YAML refuses tabs where JSON
    allows them as spaces (an editor's tab-indented JSON): such text is read as JSON."""
    if isinstance(text, bytes):
        text = decode_config(text, source)
    if not text.strip():
        raise InvalidConfig(f"{source} is empty: {EMPTY_JOB_FILE}")
    as_json = source.lower().endswith(".json") or text.lstrip().startswith(("{", "["))
    try:
        return parse_yaml(text, source)
    except InvalidConfig as yaml_error:
        too_big = len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES
        if too_big or not as_json:
            raise
        try:
            return json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            # Written as JSON: JSON's error says where it goes wrong, YAML's would mislead.
            raise InvalidConfig(
                f"invalid JSON in {source} at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                [ErrorDetail(f"{source}:{exc.lineno}:{exc.colno}", exc.msg)],
            ) from None
        except (ValueError, RecursionError):
            raise yaml_error from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} is given twice")
        out[key] = value
    return out


def load_job_file(
    text: str | bytes, *, filename: str = "", task_kind: JobSpecKind = JobSpecKind.GENERIC
) -> JobSpec:
    """The spec of a job file's text (YAML or JSON): an OpenPAI job (protocol v2 or v1), or a
    Determined command or task config (read as ``task_kind``).

    Raises :class:`~assay.errors.InvalidConfig` listing every problem with its path; a file of
    none of these formats is refused naming the keys that tell each apart.
    """
    source = filename or "<job file>"
    raw = _parse(text, source)
    found = job_format(raw)
    if found == "openpai-v2":
        return build_v2(validated(OpenPaiJobV2, raw, "OpenPAI job"))
    if found == "openpai-v1":
        return build_v1(validated(OpenPaiJobV1, raw, "OpenPAI v1 job"), raw)
    if found == "determined":
        if "searcher" in raw:
            detail = ErrorDetail(
                "searcher",
                "this is an experiment config (it has a searcher): create an experiment from "
                "it instead (assay experiment create)",
            )
            raise invalid("job file", [detail])
        return load_task_config(raw, kind=task_kind, filename=source)
    if isinstance(raw, dict):
        keys = ", ".join(map(str, raw)) or "none"
        message = f"not a job file assay can read: {_FORMATS}; this one has the keys: {keys}"
    else:
        message = f"must be a map of keys to values ({_FORMATS}), got {show(raw)}"
    raise invalid("job file", [ErrorDetail("", message)])
