"""make_searcher builds every searcher from its config; preview_search simulates it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import assay
from assay.config import load_experiment_config
from assay.errors import InvalidConfig
from assay.protocol import ExitedReason
from assay.searcher import (
    EVERY_TRIAL_FAILED,
    Create,
    OptunaSource,
    RandomSearch,
    Searcher,
    Shutdown,
    make_searcher,
    preview_search,
)
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._early_stop import EarlyStopping
from assay.searcher._tournament import Tournament
from assay.searcher.testing import check_method
from tests.corpus import corpus_dir

HPARAMS = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "count": 2},
    "width": {"type": "int", "minval": 8, "maxval": 64, "count": 3},
    "act": {"type": "categorical", "vals": ["relu", "tanh"]},
}


def _config(searcher: dict[str, Any]) -> Any:
    raw = {
        "entrypoint": "python3 train.py",
        "hyperparameters": HPARAMS,
        "searcher": {"metric": "loss", **searcher},
    }
    return load_experiment_config(raw)


SEARCHERS: dict[str, dict[str, Any]] = {
    "single": {"name": "single", "max_length": {"batches": 100}},
    "random": {"name": "random", "max_trials": 6, "max_length": {"batches": 100}},
    "random_tpe": {
        "name": "random",
        "max_trials": 6,
        "max_length": {"batches": 10},
        "sampler": {"name": "tpe", "seed": 3},
    },
    "grid": {"name": "grid", "max_length": {"epochs": 2}, "max_concurrent_trials": 2},
    "async_halving": {
        "name": "async_halving",
        "num_rungs": 3,
        "max_trials": 9,
        "divisor": 3,
        "max_length": {"batches": 90},
        "max_concurrent_trials": 3,
    },
    "adaptive_asha": {
        "name": "adaptive_asha",
        "max_trials": 16,
        "max_length": {"batches": 64},
        "divisor": 2,
        "max_concurrent_trials": 4,
    },
    "adaptive_asha_time": {
        "name": "adaptive_asha",
        "max_trials": 10,
        "time_metric": "batches",
        "max_time": 100,
        "max_concurrent_trials": 3,
    },
    "hyperband": {"name": "hyperband", "max_length": {"batches": 27}, "eta": 3},
    "tpe": {"name": "tpe", "max_trials": 6, "max_length": {"batches": 10}, "n_startup_trials": 2},
    "pbt": {
        "name": "pbt",
        "population_size": 4,
        "num_rounds": 3,
        "length_per_round": {"batches": 50},
        "replace_function": {"truncate_fraction": 0.25},
        "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
    },
    "anneal": {"name": "anneal", "max_trials": 8, "max_length": {"batches": 10}},
    "evolution": {
        "name": "evolution",
        "max_trials": 10,
        "population_size": 3,
        "max_length": {"batches": 10},
        "max_concurrent_trials": 2,
    },
    "batch": {"name": "batch", "points": [{"lr": 0.1}, {"lr": 0.01, "width": 9}, {"act": "x"}]},
    "bohb": {
        "name": "hyperband",
        "max_length": {"batches": 27},
        "sampler": {"name": "tpe", "options": {"n_startup_trials": 3}},
    },
    "random_medianstop": {
        "name": "random",
        "max_trials": 5,
        "max_concurrent_trials": 2,
        "early_stopping": {"name": "medianstop", "start_step": 2, "min_trials": 1},
    },
}


@pytest.mark.parametrize("key", sorted(SEARCHERS))
def test_every_searcher_config_builds_a_conforming_searcher(key: str) -> None:
    cfg = _config(SEARCHERS[key])
    trace = check_method(lambda: make_searcher(cfg, 17), seed=4, restore_points=1)
    assert trace.created


def test_time_metric_makes_asha_code_driven_and_stopping() -> None:
    searcher = make_searcher(_config(SEARCHERS["adaptive_asha_time"]), 1)
    assert searcher.code_driven
    assert isinstance(searcher.method, Tournament)
    assert all(isinstance(m, AsyncHalvingStopping) for m in searcher.method.methods)


def test_max_length_makes_asha_promote() -> None:
    searcher = make_searcher(_config(SEARCHERS["async_halving"]), 1)
    assert not searcher.code_driven and isinstance(searcher.method, AsyncHalving)


def test_sampler_option_puts_optuna_behind_random_search() -> None:
    searcher = make_searcher(_config(SEARCHERS["random_tpe"]), 1)
    assert isinstance(searcher.method, RandomSearch)
    assert isinstance(searcher.method.source, OptunaSource)
    assert searcher.method.source.sampler_name == "tpe"


def test_early_stopping_wraps_the_method_and_is_code_driven_without_max_length() -> None:
    searcher = make_searcher(_config(SEARCHERS["random_medianstop"]), 1)
    assert searcher.code_driven and isinstance(searcher.method, EarlyStopping)


def test_same_seed_gives_the_same_search() -> None:
    cfg = _config(SEARCHERS["adaptive_asha"])
    first = make_searcher(cfg, 99).initial_operations()
    assert make_searcher(cfg, 99).initial_operations() == first
    assert make_searcher(cfg, 100).initial_operations() != first


def test_custom_searcher_needs_the_master_runner() -> None:
    cfg = _config({"name": "custom", "class": "my:Searcher"})
    with pytest.raises(InvalidConfig, match="context directory"):
        make_searcher(cfg, 1)


def test_preview_of_adaptive_asha_reports_brackets_lengths_and_compute() -> None:
    preview = preview_search(_config(SEARCHERS["adaptive_asha"]), 5)
    assert preview.trials == 16
    assert preview.max_concurrency <= 4
    # max_rungs = min(5, log2(64) + 1, log2(16) + 1) = 5; standard mode: brackets of 5, 4, 3.
    assert [b.rungs for b in preview.brackets] == [
        (4, 8, 16, 32, 64),
        (8, 16, 32, 64),
        (16, 32, 64),
    ]
    assert sum(b.max_trials for b in preview.brackets) == 16
    assert preview.lengths[4] == preview.brackets[0].max_trials
    assert preview.total_compute < 16 * 64, "early stopping must save compute"
    text = preview.render()
    assert "total compute" in text and "batches" in text and "4, 8, 16, 32, 64" in text


def test_preview_of_random_is_max_trials_times_max_length() -> None:
    preview = preview_search(_config(SEARCHERS["random"]), 5)
    assert preview.trials == 6
    assert preview.total_compute == 600
    assert preview.lengths == {100: 6}


def test_preview_of_a_custom_searcher_is_refused_with_a_reason() -> None:
    with pytest.raises(InvalidConfig, match="cannot be previewed"):
        preview_search(_config({"name": "custom", "class": "my:Searcher"}), 1)


def test_every_determined_example_config_builds_and_previews() -> None:
    experiments = corpus_dir("determined", "experiments")
    checked = 0
    for path in sorted(experiments.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        cfg = load_experiment_config(raw)
        searcher = make_searcher(cfg, random.Random(path.name).randrange(2**31))
        assert isinstance(searcher, Searcher)
        preview = preview_search(cfg, 0)
        assert preview.trials >= 1, path.name
        assert preview.failure is None, path.name
        checked += 1
    assert checked >= 10


def test_preview_figures_do_not_depend_on_the_processes_string_hashing() -> None:
    # Simultaneous events are ordered as the searcher's operations name the trials; a set's
    # order (which changes with PYTHONHASHSEED) once leaked into the figures.
    searcher = {**SEARCHERS["async_halving"], "stop_once": True, "max_length": {"batches": 300}}
    code = (
        "import dataclasses, json, sys\n"
        "from assay.config import load_experiment_config\n"
        "from assay.searcher import preview_search\n"
        "cfg = load_experiment_config(json.loads(sys.argv[1]))\n"
        "print(json.dumps(dataclasses.asdict(preview_search(cfg, 2)), sort_keys=True))\n"
    )
    raw = json.dumps(
        {"entrypoint": "x", "hyperparameters": HPARAMS, "searcher": {"metric": "l", **searcher}}
    )
    src = str(Path(assay.__file__).resolve().parents[1])
    outputs = set()
    for hash_seed in ("0", "1", "2", "3"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": hash_seed,
            "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        }
        done = subprocess.run(
            [sys.executable, "-c", code, raw], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_tournament_whose_brackets_all_fail_says_so_once() -> None:
    searcher = make_searcher(
        _config(
            {
                "name": "adaptive_asha",
                "max_trials": 4,
                "max_length": {"batches": 64},
                "max_concurrent_trials": 2,
            }
        ),
        1,
    )
    tournament = searcher.method
    assert isinstance(tournament, Tournament) and len(tournament.methods) > 1
    pending = tournament.initial_operations()
    shutdowns: list[Shutdown] = []
    while pending:
        op = pending.pop(0)
        if isinstance(op, Create):
            pending += tournament.trial_created(op.request_id)
            pending += tournament.trial_exited_early(op.request_id, ExitedReason.ERRORED)
        elif isinstance(op, Shutdown):
            shutdowns.append(op)
    assert [(s.failure, s.message) for s in shutdowns] == [(True, EVERY_TRIAL_FAILED)]
