"""NNI tuners, advisors and assessors as assay searchers and early-stopping rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.config._base import show
from assay.config.nni._keys import norm
from assay.config.nni._paths import class_arg
from assay.errors import ErrorDetail

METRIC = "default"
"""What the ``nni`` trial module reports a result as (the number NNI's tuners see)."""

NEAREST = {
    "smac": ("tpe", "SMAC is run as TPE (assay's nearest model-based searcher)"),
    "metistuner": ("gp", "MetisTuner is run as GP (assay's nearest model-based searcher)"),
    "metis": ("gp", "Metis is run as GP (assay's nearest model-based searcher)"),
    "dngotuner": ("gp", "DNGOTuner is run as GP (assay's nearest model-based searcher)"),
    "dngo": ("gp", "DNGO is run as GP (assay's nearest model-based searcher)"),
}
BUILTIN = (
    "TPE, Random, Anneal, Evolution, GridSearch, BatchTuner, Hyperband, BOHB, PBT, GP, SMAC, "
    "Metis, DNGO"
)


@dataclass
class Mapped:
    """A searcher section (without early stopping), notes, and problems."""

    searcher: dict[str, Any] = field(default_factory=dict)
    seed: Any = None
    """``classArgs.seed``: the experiment's seed (every searcher draws from it)."""
    notes: list[str] = field(default_factory=list)
    problems: list[ErrorDetail] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    """The searcher's keys (``population_size``) and the NNI paths they were read from."""


def _args(section: dict[str, Any], where: str, problems: list[ErrorDetail]) -> dict[str, Any]:
    raw = next((v for k, v in section.items() if norm(k) == "classargs"), None) or {}
    if not isinstance(raw, dict):
        problems.append(ErrorDetail(f"{where}.classArgs", f"must be a map, got {show(raw)}"))
        return {}
    return {norm(str(k)): v for k, v in raw.items()}


def smaller_is_better(args: dict[str, Any], where: str, problems: list[ErrorDetail]) -> bool:
    mode = args.get("optimizemode", "maximize")
    if mode not in ("maximize", "minimize"):
        problems.append(
            ErrorDetail(
                f"{where}.classArgs.optimize_mode",
                f"must be maximize or minimize, got {show(mode)}",
            )
        )
    return bool(mode == "minimize")


def builtin_name(section: dict[str, Any]) -> str | None:
    for key in ("name", "builtintunername", "builtinadvisorname", "builtinassessorname"):
        for k, v in section.items():
            if norm(k) == key and isinstance(v, str):
                return v
    return None


def map_tuner(
    section: dict[str, Any],
    where: str,
    *,
    max_trials: int,
    concurrency: int,
    space: dict[str, Any],
) -> Mapped:
    """The searcher for a builtin tuner or advisor section (``{name, classArgs}``)."""
    out = Mapped()
    name = builtin_name(section) or ""
    args = _args(section, where, out.problems)
    base: dict[str, Any] = {
        "metric": METRIC,
        "smaller_is_better": smaller_is_better(args, where, out.problems),
    }
    key = norm(name)
    trials = {"max_trials": max_trials, "max_concurrent_trials": concurrency}
    if key in ("tpe", "random", "randomsearch", "anneal", "gptuner", "gp"):
        kind = {"randomsearch": "random", "gptuner": "gp"}.get(key, key)
        out.searcher = {**base, "name": kind, **trials}
        out.seed = args.get("seed")
    elif key in NEAREST:
        kind, note = NEAREST[key]
        out.searcher = {**base, "name": kind, **trials}
        out.notes.append(f"{where}: {note}")
    elif key == "evolution":
        population = args.get("populationsize", 32)
        out.searcher = {**base, "name": "evolution", "population_size": population, **trials}
    elif key == "gridsearch":
        # NNI ends the experiment after maxTrialNumber trials, whatever the tuner.
        out.searcher = {**base, "name": "grid", **trials}
    elif key == "batchtuner":
        out.searcher = {**base, "name": "batch", **trials}
        out.searcher["points"] = _batch_points(space, where, out.problems)
    elif key in ("hyperband", "bohb"):
        length = args.get("r", 60) if key == "hyperband" else args.get("maxbudget", 3)
        out.searcher = {
            **base,
            "name": "hyperband",
            "divisor": args.get("eta", 3),
            "max_length": length,
            "max_trials": max_trials,
            "max_concurrent_trials": concurrency,
        }
        if key == "bohb":
            out.searcher["sampler"] = {"name": "tpe"}
    elif key in ("pbt", "pbttuner"):
        population = args.get("populationsize", 10)
        rounds = max(1, max_trials // max(1, int(population))) if isinstance(population, int) else 1
        out.searcher = {
            **base,
            "name": "pbt",
            "population_size": population,
            "num_rounds": rounds,
            "length_per_round": 1,
            "replace_function": {"truncate_fraction": args.get("fraction", 0.2)},
            "explore_function": {
                "resample_probability": args.get("resampleprobability", 0.25),
                "perturb_factor": args.get("factor", 0.2),
            },
        }
    else:
        what = f"unknown NNI tuner {show(name)}" if name else "required: a tuner name"
        out.problems.append(
            ErrorDetail(
                f"{where}.name",
                f"{what}; expected one of: {BUILTIN}, or a custom tuner (className and "
                "codeDirectory)",
            )
        )
        return out
    _note_unused(section, where, _USED.get(key, set()), out.notes)
    mode = class_arg(section, where, "optimizemode", "optimize_mode")
    out.paths = {"metric": mode, "smaller_is_better": mode}
    for ours, (nni_key, spelling) in _ARG_PATHS.get(key, {}).items():
        out.paths[ours] = class_arg(section, where, nni_key, spelling)
    return out


_ARG_PATHS: dict[str, dict[str, tuple[str, str]]] = {
    "evolution": {"population_size": ("populationsize", "population_size")},
    "hyperband": {"divisor": ("eta", "eta"), "max_length": ("r", "R")},
    "bohb": {"divisor": ("eta", "eta"), "max_length": ("maxbudget", "max_budget")},
    "pbt": {
        "population_size": ("populationsize", "population_size"),
        "replace_function": ("fraction", "fraction"),
        "explore_function.resample_probability": (
            "resampleprobability",
            "resample_probability",
        ),
        "explore_function.perturb_factor": ("factor", "factor"),
    },
}
"""The searcher keys each tuner's classArgs become (for naming them in problems)."""
_ARG_PATHS["pbttuner"] = _ARG_PATHS["pbt"]


_USED = {
    "tpe": {"seed"},
    "random": {"seed"},
    "randomsearch": {"seed"},
    "gp": {"seed"},
    "gptuner": {"seed"},
    "evolution": {"populationsize"},
    "hyperband": {"r", "eta"},
    "bohb": {"maxbudget", "eta"},
    "pbt": {"populationsize", "fraction", "resampleprobability", "factor"},
    "pbttuner": {"populationsize", "fraction", "resampleprobability", "factor"},
}
"""The classArgs each tuner's searcher honours besides ``optimize_mode``."""


def _note_unused(section: dict[str, Any], where: str, used: set[str], notes: list[str]) -> None:
    raw = next((v for k, v in section.items() if norm(k) == "classargs"), None) or {}
    if not isinstance(raw, dict):
        return
    unused = [str(k) for k in raw if norm(str(k)) not in used | {"optimizemode"}]
    if unused:
        notes.append(
            f"{where}.classArgs accepted but not used (assay's searcher has its own settings): "
            + ", ".join(unused)
        )


def _batch_points(
    space: dict[str, Any], where: str, problems: list[ErrorDetail]
) -> list[dict[str, Any]]:
    # BatchTuner's space is one choice (by convention ``combine_params``) whose options are the
    # points to run, in order.
    if len(space) == 1:
        (only,) = space.values()
        if isinstance(only, dict) and only.get("type") == "choice":
            points = only.get("options", [])
            if all(isinstance(p, dict) for p in points):
                return [{k: _plain(v) for k, v in p.items()} for p in points]
    problems.append(
        ErrorDetail(
            where,
            "BatchTuner needs a search space of one choice whose options are maps, each one "
            "trial's hyperparameters (NNI's combine_params)",
        )
    )
    return []


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "const":
        return value.get("val")
    return value


def map_assessor(
    section: dict[str, Any], where: str
) -> tuple[dict[str, Any] | None, list[ErrorDetail]]:
    """The ``early_stopping`` section for a builtin assessor."""
    problems: list[ErrorDetail] = []
    name = builtin_name(section) or ""
    args = _args(section, where, problems)
    key = norm(name)
    if key == "medianstop":
        smaller_is_better(args, where, problems)
        rule: dict[str, Any] = {"name": "medianstop"}
        if "startstep" in args:
            rule["start_step"] = args["startstep"]
        return rule, problems
    if key == "curvefitting":
        rule = {"name": "curvefitting", "epoch_num": args.get("epochnum", 20)}
        for nni_key, ours in (
            ("startstep", "start_step"),
            ("threshold", "threshold"),
            ("gap", "gap"),
        ):
            if nni_key in args:
                rule[ours] = args[nni_key]
        return rule, problems
    problems.append(
        ErrorDetail(
            f"{where}.name",
            f"unknown NNI assessor {show(name)}; expected Medianstop or Curvefitting",
        )
    )
    return None, problems
