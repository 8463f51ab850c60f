"""Determined's own expconf schema test cases, run against assay's config models.

Each case of ``determined/schema-cases/*.yaml`` in the compat corpus is one test. A case names
Determined schemas by URL: ``sane_as`` / ``complete_as`` (must validate), ``sanity_errors`` /
``completeness_errors`` (must fail; an expected error that names a path must be matched by one
of ours at that path or under it) and ``default_as`` + ``defaulted`` (the defaults filled in).
Each URL maps to the assay model that plays its part; cases about things assay does not model
are skipped one by one, with the reason. Every real Determined experiment config of the corpus
must load too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter

from assay.config import (
    BindMount,
    CheckpointStorageConfig,
    EnvironmentConfig,
    ErrorDetail,
    ExperimentConfig,
    Hyperparameter,
    InvalidConfig,
    Length,
    PositiveLength,
    ProfilingConfig,
    ResourcesConfig,
    SearcherConfig,
    SecurityConfig,
    grid_problems,
    load_experiment_config,
    parse_hyperparameters,
    parse_yaml,
    validate_as,
)
from tests.corpus import compat_dir, corpus_dir, missing

COMPAT = compat_dir()
CASES_DIR = COMPAT / "determined" / "schema-cases"
EXPERIMENTS_DIR = COMPAT / "determined" / "experiments"
URL = "http://determined.ai/schemas/expconf/v0/"

# Cases assay deliberately treats differently, by (file, case name).
SKIPPED_CASES = {
    ("compare_properties.yaml", "a<b compareProperties (invalid, equal)"): (
        "assay accepts an int hyperparameter with minval == maxval (a one-value range the "
        "searchers handle); Determined refuses it"
    ),
    ("environment.yaml", "podspec cannot configure determined container"): (
        "assay merges a pod spec's determined-container fields under its own (its image, "
        "command, resources and variables win; docs/kubernetes.md) where Determined refuses "
        "them, and checks the pod it makes against Kubernetes' own V1Pod model"
    ),
}
# Schemas assay has no model for, by file name prefix, with the reason.
UNMODELED = {
    "log-": "log_policies are accepted as a loose section; their actions are not modeled",
    "test-": "Determined's test schemas for its own code generator; no assay counterpart",
}
# Keys of loose sections, whose defaults assay does not fill in.
LOOSE_KEYS = {
    "optimizations",
    "integrations",
    "data_layer",
    "internal",
    "slurm",
    "pbs",
    "tensorboard_storage",
    "log_policies",
    "pod_spec",
    "registry_auth",
}


def _problems_as(tp: Any, under: str | None = None) -> Callable[[Any], list[ErrorDetail]]:
    """Validation against ``tp``; with ``under``, of ``{under: case}``, paths made relative."""

    def problems(case: Any) -> list[ErrorDetail]:
        raw = case if under is None else {under: case}
        try:
            validate_as(tp, raw, what="section")
        except InvalidConfig as exc:
            return [_relative(d, under) for d in exc.details]
        return []

    return problems


def _relative(detail: ErrorDetail, under: str | None) -> ErrorDetail:
    if under is None:
        return detail
    path = detail.path
    if path == under:
        path = ""
    elif path.startswith(under + "."):
        path = path[len(under) + 1 :]
    return ErrorDetail(path, detail.message)


def _experiment_problems(case: Any) -> list[ErrorDetail]:
    try:
        load_experiment_config(case)
    except InvalidConfig as exc:
        return exc.details
    return []


def _grid_problems(case: Any) -> list[ErrorDetail]:
    problems = _problems_as(dict[str, Hyperparameter])(case)
    return problems + grid_problems(case)


def _validator(schema: str) -> Callable[[Any], list[ErrorDetail]] | None:
    name = schema.removeprefix(URL)
    exact: dict[str, Callable[[Any], list[ErrorDetail]]] = {
        "experiment.json": _experiment_problems,
        "length.json": _problems_as(Length),
        "check-positive-length.json": _problems_as(PositiveLength),
        "bind-mount.json": _problems_as(BindMount),
        "resources.json": _problems_as(ResourcesConfig),
        "environment.json": _problems_as(EnvironmentConfig),
        "environment-image.json": _problems_as(EnvironmentConfig, "image"),
        "environment-variables.json": _problems_as(EnvironmentConfig, "environment_variables"),
        "profiling.json": _problems_as(ProfilingConfig),
        "security.json": _problems_as(SecurityConfig),
        "check-grid-hyperparameter.json": _grid_problems,
    }
    if name in exact:
        return exact[name]
    if name.startswith("searcher"):
        return _problems_as(SearcherConfig)
    if name.startswith("hyperparameter"):
        return _problems_as(Hyperparameter)
    if name in ("checkpoint-storage.json", "shared-fs.json", "s3.json", "gcs.json"):
        return _problems_as(CheckpointStorageConfig)
    if name in ("directory.json", "azure.json"):
        return _problems_as(CheckpointStorageConfig)
    return None


# The model whose defaults stand for a schema's, for ``default_as``.
DEFAULT_TYPES: dict[str, Any] = {
    "experiment.json": ExperimentConfig,
    "searcher.json": SearcherConfig,
    "bind-mount.json": BindMount,
    "environment.json": EnvironmentConfig,
    "resources.json": ResourcesConfig,
}


def _defaults(schema: str, case: Any) -> Any:
    """The case with assay's defaults filled in, in JSON form (nulls kept)."""
    adapter: TypeAdapter[Any] = TypeAdapter(DEFAULT_TYPES[schema.removeprefix(URL)])
    return adapter.dump_python(adapter.validate_python(case), mode="json", by_alias=True)


def _sanity_allowed(schema: str, detail: ErrorDetail) -> bool:
    # Determined's sanity layer lets a partial experiment config through (searcher and
    # entrypoint are only required for completeness); assay requires both when it loads one.
    return (
        schema.endswith("/experiment.json")
        and detail.path in ("searcher", "entrypoint")
        # A missing searcher may add a hint that the file looks like a task config.
        and detail.message.split(";", 1)[0] == "required"
    )


def _expected_path(pattern: str) -> str | None:
    """The path an expected error names (``<config>.a.b[2]: ...`` -> ``a.b[2]``), if any."""
    if not pattern.startswith("<config>"):
        return None
    head = pattern[len("<config>") :].split(":", 1)[0]
    return re.sub(r"\\(.)", r"\1", head).lstrip(".")


def _at_or_under(path: str, expected: str) -> bool:
    return (
        not expected
        or path == expected
        or path.startswith(expected + ".")
        or path.startswith(expected + "[")
    )


def _matches_defaults(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` ("*" matches anything; keys assay does not
    model, and loose sections, are not compared)."""
    if expected == "*":
        return []
    if isinstance(expected, dict) and isinstance(actual, dict):
        diffs: list[str] = []
        for key, value in expected.items():
            if key in LOOSE_KEYS or key not in actual:
                continue
            diffs.extend(_matches_defaults(value, actual[key], f"{where}.{key}"))
        return diffs
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for d in _matches_defaults(e, a, f"{where}[{i}]")
        ]
    return (
        [] if expected == actual else [f"{where or '<config>'}: want {expected!r}, got {actual!r}"]
    )


def _load_cases() -> list[Any]:
    if not CASES_DIR.is_dir():
        return [pytest.param(None, None, id="missing")]
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text()) or []:
            params.append(pytest.param(path.name, case, id=f"{path.name}::{case['name']}"))
    return params or [pytest.param(None, None, id="missing")]


def _checks(case: dict[str, Any]) -> tuple[list[tuple[str, bool, list[str]]], list[str]]:
    """The (schema, must pass, expected errors) checks of a case, and the schemas not run."""
    checks: list[tuple[str, bool, list[str]]] = []
    for key in ("sane_as", "complete_as"):
        checks.extend((schema, True, []) for schema in case.get(key) or [])
    for key in ("sanity_errors", "completeness_errors"):
        checks.extend((schema, False, errs) for schema, errs in (case.get(key) or {}).items())
    unmodeled = [s for s, _, _ in checks if _validator(s) is None]
    return [c for c in checks if _validator(c[0]) is not None], unmodeled


@pytest.mark.parametrize(("file", "case"), _load_cases())
def test_determined_schema_case(file: str | None, case: dict[str, Any] | None) -> None:
    if file is None or case is None:
        missing(CASES_DIR)
    case_id = f"{file}::{case['name']}"
    reason = SKIPPED_CASES.get((file, case["name"]))
    if reason:
        pytest.skip(f"{case_id}: {reason}")
    checks, unmodeled = _checks(case)
    default_as = case.get("default_as")
    if default_as is not None and default_as.removeprefix(URL) not in DEFAULT_TYPES:
        unmodeled.append(default_as)
        default_as = None
    if not checks and default_as is None:
        pytest.skip(f"{case_id}: {_why_not_run(case, unmodeled)}")
    value = case.get("case")
    for schema, must_pass, expected in checks:
        validate = _validator(schema)
        assert validate is not None
        problems = validate(value)
        if must_pass:
            unexpected = [d for d in problems if not _sanity_allowed(schema, d)]
            assert not unexpected, f"{schema}: expected valid, got {[str(d) for d in unexpected]}"
            continue
        assert problems, f"{schema}: expected errors {expected}, got none"
        for pattern in expected:
            path = _expected_path(pattern)
            if path is not None:
                found = [d.path for d in problems]
                assert any(_at_or_under(p, path) for p in found), (
                    f"{schema}: expected an error at {path!r} ({pattern}), got {found}"
                )
    if default_as is not None:
        diffs = _matches_defaults(case["defaulted"], _defaults(default_as, value))
        assert not diffs, diffs


def _why_not_run(case: dict[str, Any], unmodeled: list[str]) -> str:
    if "merge_as" in case:
        return "merging configs (templates into experiments) is not modeled by assay"
    names = [s.removeprefix(URL) for s in unmodeled]
    for prefix, reason in UNMODELED.items():
        if any(n.startswith(prefix) for n in names):
            return reason
    return f"no assay model for {', '.join(names)}"


def _experiment_files() -> list[Any]:
    if not EXPERIMENTS_DIR.is_dir():
        return [pytest.param(None, id="missing")]
    found = [pytest.param(p, id=p.name) for p in sorted(EXPERIMENTS_DIR.glob("*.yaml"))]
    return found or [pytest.param(None, id="missing")]


@pytest.mark.parametrize("path", _experiment_files())
def test_real_determined_experiment_loads_and_round_trips(path: Path | None) -> None:
    if path is None:
        missing(EXPERIMENTS_DIR)
    cfg = load_experiment_config(parse_yaml(path.read_text(), path.name))
    assert load_experiment_config(cfg.to_json()) == cfg


def test_hyperparameter_maps_of_schema_cases_parse() -> None:
    # Keeps parse_hyperparameters (the searcher's entry point) in step with the model.
    cases = yaml.safe_load((corpus_dir("determined", "schema-cases") / "misc.yaml").read_text())
    grid = next(c for c in cases if c["name"] == "check counts for grid (valid)")
    assert set(parse_hyperparameters(grid["case"])) == set(grid["case"])
