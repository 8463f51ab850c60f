"""Checks beyond the schema that Determined's master makes before it accepts an experiment.

They run on the JSON form of a config, so they also run on a raw config that failed schema
validation: a person sees every problem in one message. Anything not shaped as expected is
skipped here; the schema reports it.
"""

from __future__ import annotations

from typing import Any

from assay.config._experiment import ExperimentConfig
from assay.config._searcher import EOL_SEARCHERS, LENGTH_DRIVEN, OPTUNA_SEARCHERS
from assay.errors import ErrorDetail

GRID_COUNT_MESSAGE = "grid search is in use but count was not provided"
_TIME_BOUND = (*LENGTH_DRIVEN, *OPTUNA_SEARCHERS)


def check_submittable(cfg: ExperimentConfig) -> list[ErrorDetail]:
    """Every reason the master would refuse ``cfg`` although it fits the schema."""
    return semantic_problems(cfg.to_json())


def semantic_problems(data: Any) -> list[ErrorDetail]:
    """:func:`check_submittable` on the JSON form of a config (possibly not schema-valid)."""
    if not isinstance(data, dict):
        return []
    problems: list[ErrorDetail] = []
    if data.get("entrypoint") is None:
        problems.append(ErrorDetail("entrypoint", "required"))
    searcher = data.get("searcher")
    if searcher is None:
        problems.append(ErrorDetail("searcher", "required"))
    elif isinstance(searcher, dict):
        problems.extend(_searcher_problems(searcher))
        hps = data.get("hyperparameters")
        if searcher.get("name") == "grid" and isinstance(hps, dict):
            problems.extend(grid_problems(hps, "hyperparameters"))
    return problems


def _searcher_problems(searcher: dict[str, Any]) -> list[ErrorDetail]:
    name = searcher.get("name")
    problems: list[ErrorDetail] = []
    if name in EOL_SEARCHERS:
        problems.append(
            ErrorDetail(
                "searcher.name",
                f"the {name} searcher has reached end of life and is no longer supported; "
                "use adaptive_asha instead",
            )
        )
    if searcher.get("metric") is None:
        problems.append(ErrorDetail("searcher.metric", "required"))
    if name in _TIME_BOUND:
        problems.extend(_length_problems(str(name), searcher))
    return problems


def _length_problems(name: str, searcher: dict[str, Any]) -> list[ErrorDetail]:
    has_length = searcher.get("max_length") is not None
    has_metric = searcher.get("time_metric") is not None
    has_time = searcher.get("max_time") is not None
    if has_length and (has_metric or has_time):
        return [
            ErrorDetail(
                "searcher.max_length",
                "give either max_length, or time_metric and max_time, not both",
            )
        ]
    if has_metric and not has_time:
        return [ErrorDetail("searcher.max_time", "required when time_metric is set")]
    if has_time and not has_metric:
        return [ErrorDetail("searcher.time_metric", "required when max_time is set")]
    if not (has_length or has_metric) and name in LENGTH_DRIVEN:
        return [
            ErrorDetail(
                "searcher",
                f"the {name} searcher needs max_length, or time_metric and max_time, to know "
                "how long trials may train",
            )
        ]
    return []


def grid_problems(hps: dict[str, Any], path: str = "") -> list[ErrorDetail]:
    """Every int/double/log hyperparameter under ``hps`` that has no ``count``.

    Nested maps are searched, and so are the elements of list constants (implicit, or explicit
    ``{type: const, val: [...]}``) that look like hyperparameter maps, as Determined's schema
    does; their paths carry the index (``hyperparameters.list_hparam[2]``).
    """
    problems: list[ErrorDetail] = []
    for name, node in hps.items():
        _grid(node, f"{path}.{name}" if path else str(name), problems)
    return problems


def _grid(node: Any, path: str, out: list[ErrorDetail]) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _grid(item, f"{path}[{i}]", out)
    elif isinstance(node, dict):
        if "type" not in node:
            for name, child in node.items():
                _grid(child, f"{path}.{name}", out)
        elif node["type"] in ("int", "double", "log") and node.get("count") is None:
            out.append(ErrorDetail(path, GRID_COUNT_MESSAGE))
        elif node["type"] == "const" and isinstance(node.get("val"), list):
            _grid(node["val"], path, out)
