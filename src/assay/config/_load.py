"""Reading configs: YAML text, ``--config key.path=value`` overrides, validation with every
problem reported at once."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from assay.config._base import show
from assay.config._checks import check_submittable, semantic_problems
from assay.config._errors import invalid, problems_from
from assay.config._experiment import ExperimentConfig
from assay.config._formats import refuse_job_file
from assay.config._limits import MAX_CONFIG_BYTES, MAX_DEPTH, TOO_DEEP, count, value_problems
from assay.config._yaml import parse_yaml
from assay.errors import ErrorDetail, InvalidConfig

_WHAT = "experiment config"


_PIECE = re.compile(r"([^\[\]]+)((?:\[\d+\])*)")


def _split_path(path: str) -> list[str | int] | None:
    """``a.b[2].c`` -> ``["a", "b", 2, "c"]``; None when malformed."""
    parts: list[str | int] = []
    for piece in path.split("."):
        match = _PIECE.fullmatch(piece.strip())
        if match is None or not match.group(1).strip():
            return None
        parts.append(match.group(1).strip())
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return parts


def _set(raw: dict[str, Any], parts: list[str | int], value: Any) -> str | None:
    """Put ``value`` at ``parts`` inside ``raw``; a message when that is impossible."""
    node: Any = raw
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[:depth])
        where = where.lstrip(".") or "the config"
        if isinstance(part, int):
            if not isinstance(node, list):
                return f"{where} is not a list, so [{part}] cannot be set"
            if part >= len(node):
                return f"{where} has {len(node)} items, so [{part}] does not exist"
        elif not isinstance(node, dict):
            return f"{where} is {show(node)}, not a map, so {part} cannot be set in it"
        if last:
            node[part] = value
        else:
            if isinstance(part, str) and node.get(part) is None:
                node[part] = {}
            node = node[part]
    return None


def overrides_applied(
    raw: dict[str, Any], overrides: Sequence[str]
) -> tuple[dict[str, Any], list[ErrorDetail]]:
    """:func:`apply_overrides`, returning the problems instead of raising them."""
    out = copy.deepcopy(raw)
    problems: list[ErrorDetail] = []
    total = sum(len(text) for text in overrides)
    if total > MAX_CONFIG_BYTES:
        too_long = (
            f"the overrides have {count(total)} characters in all; at most "
            f"{count(MAX_CONFIG_BYTES)}"
        )
        return out, [ErrorDetail("--config", too_long)]
    for text in overrides:
        where = f"--config {text}"
        path, sep, value_text = text.partition("=")
        parts = _split_path(path.strip()) if sep else None
        if not sep:
            problems.append(ErrorDetail(where, "must be key.path=value (no '=' found)"))
            continue
        if parts is None:
            problems.append(
                ErrorDetail(where, "must be key.path=value with a path such as searcher.max_trials")
            )
            continue
        if len(parts) > MAX_DEPTH:
            problems.append(ErrorDetail(where, f"the path has more than {MAX_DEPTH} parts"))
            continue
        try:
            value = parse_yaml(value_text, f"the value of --config {path.strip()}")
        except InvalidConfig as exc:
            problems.append(ErrorDetail(where, exc.message))
            continue
        problem = _set(out, parts, value)
        if problem is not None:
            problems.append(ErrorDetail(where, problem))
    return out, problems


def apply_overrides(raw: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``raw`` with each ``key.path=value`` of ``overrides`` applied, in order (``raw`` itself is
    not changed).

    The value is read as YAML (``4``, ``true``, ``{type: const, val: 0.1}``); maps along the path
    are created as needed; ``[i]`` indexes an existing list (``bind_mounts[0].read_only=true``).
    """
    out, problems = overrides_applied(raw, overrides)
    if problems:
        raise invalid("--config overrides", problems)
    return out


def load_experiment_config(
    raw: Any,
    *,
    overrides: Sequence[str] = (),
    max_grid_points: int | None = None,
    stored: bool = False,
) -> ExperimentConfig:
    """Validate a raw experiment config (as parsed from YAML or JSON), with overrides applied.

    Raises :class:`InvalidConfig` listing every problem: malformed overrides first, then values
    no config may hold (:func:`~assay.config._limits.value_problems`), schema problems, and the
    submission checks of :func:`check_submittable`. A grid of more than ``max_grid_points``
    points is refused (with None, only past the absolute limit: a stored experiment still loads
    after the master's limit was lowered). ``stored``: the config of an experiment the master
    already holds, which still loads where a submission rule came later (a Trial-class
    entrypoint, :mod:`assay.config.determined._legacy`). An OpenPAI job is refused in one line
    (:class:`~assay.config._formats.NotAnExperimentConfig`).
    """
    problems: list[ErrorDetail] = []
    if not isinstance(raw, dict):
        detail = ErrorDetail("", f"must be a map of keys to values, got {show(raw)}")
        raise invalid(_WHAT, [detail])
    # An OpenPAI job would fail on every one of its keys; one line saying what it is helps more.
    refuse_job_file(raw)
    if overrides:
        raw, problems = overrides_applied(raw, overrides)
    values = value_problems(raw)
    if any(d.message == TOO_DEEP for d in values):
        # The validators walk by recursion: nothing deeper goes to them.
        raise invalid(_WHAT, problems + values)
    try:
        cfg = ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        schema = [_task_hint(raw, d) for d in problems_from(exc, ExperimentConfig)]
        # The schema's message names the field's own limit; the general one is left out.
        reported = {d.path for d in schema}
        values = [d for d in values if d.path not in reported]
        reported |= {d.path for d in values}
        semantic = [d for d in semantic_problems(raw, stored=stored) if d.path not in reported]
        raise invalid(_WHAT, problems + values + schema + semantic) from None
    problems += values
    problems.extend(check_submittable(cfg, max_grid_points=max_grid_points, stored=stored))
    if problems:
        raise invalid(_WHAT, problems)
    return cfg


_TASK_HINT = (
    "required; with an entrypoint but no searcher or hyperparameters this looks like a "
    "Determined command or task config: run it with `assay job submit`"
)


def _task_hint(raw: dict[str, Any], detail: ErrorDetail) -> ErrorDetail:
    """The missing searcher's problem, saying so when the file reads as a Determined task config
    (only a guess, so it stays one problem among the others rather than a refusal)."""
    if detail.path != "searcher" or detail.message != "required":
        return detail
    if "entrypoint" not in raw or "hyperparameters" in raw:
        return detail
    return ErrorDetail(detail.path, _TASK_HINT)
