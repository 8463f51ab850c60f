"""Reading configs: YAML text, ``--config key.path=value`` overrides, validation with every
problem reported at once."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import ValidationError

from assay.config._base import show
from assay.config._checks import check_submittable, semantic_problems
from assay.config._errors import invalid, problems_from
from assay.config._experiment import ExperimentConfig
from assay.errors import ErrorDetail, InvalidConfig

_WHAT = "experiment config"


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, adjusted to read configs as Determined (Go's YAML) does:
    ``1e-3`` is a float, dates stay strings, and a key given twice is an error rather than
    silently overwritten."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key; the base constructor says what is wrong
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"key {key!r} is given twice (first on line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, source: str) -> Any:
    """The data in YAML ``text``; ``source`` (a file name) is named in errors with the line and
    column of the problem."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        if mark is None:
            raise InvalidConfig(f"invalid YAML in {source}: {problem}") from None
        line, column = mark.line + 1, mark.column + 1
        raise InvalidConfig(
            f"invalid YAML in {source} at line {line}, column {column}: {problem}",
            [ErrorDetail(f"{source}:{line}:{column}", problem)],
        ) from None
    except yaml.YAMLError as exc:
        raise InvalidConfig(f"invalid YAML in {source}: {exc}") from None


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


def load_experiment_config(raw: Any, *, overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Validate a raw experiment config (as parsed from YAML or JSON), with overrides applied.

    Raises :class:`InvalidConfig` listing every problem: malformed overrides first, then schema
    problems, then the submission checks of :func:`check_submittable`.
    """
    problems: list[ErrorDetail] = []
    if not isinstance(raw, dict):
        detail = ErrorDetail("", f"must be a map of keys to values, got {show(raw)}")
        raise invalid(_WHAT, [detail])
    if overrides:
        raw, problems = overrides_applied(raw, overrides)
    try:
        cfg = ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        schema = problems_from(exc, ExperimentConfig)
        reported = {d.path for d in schema}
        semantic = [d for d in semantic_problems(raw) if d.path not in reported]
        raise invalid(_WHAT, problems + schema + semantic) from None
    problems.extend(check_submittable(cfg))
    if problems:
        raise invalid(_WHAT, problems)
    return cfg
