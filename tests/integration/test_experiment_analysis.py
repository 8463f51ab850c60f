"""The Experiment page's analyses on a real cluster: an ASHA search's rungs agree with what its
trials reported, during the search and after it, progress counts what training trials reported,
and hyperparameter importance ranks the searched hyperparameters of the finished trials (or says
why it cannot)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from assay import rest
from tests.integration.cluster import Cluster, serve, wait_for

pytestmark = pytest.mark.integration

SEARCHED = {"x", "layers", "opt", "lr"}


def analysis_config(searcher: dict[str, Any], **constants: Any) -> str:
    return yaml.safe_dump(
        {
            "name": "analysis",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": 0.001,
                "checkpoint_every": 1000,
                **constants,
                "x": {"type": "double", "minval": 1, "maxval": 10},
                "layers": {"type": "int", "minval": 1, "maxval": 8},
                "opt": {"type": "categorical", "vals": ["sgd", "adam", "rmsprop"]},
                "lr": {"type": "log", "minval": -4, "maxval": -1},
            },
            "searcher": {"metric": "loss", **searcher},
            "max_restarts": 0,
        }
    )


# Rungs at 2 and 4 batches; a trial that does not rank goes no further (stop_once).
ASHA = {
    "name": "async_halving",
    "num_rungs": 2,
    "divisor": 2,
    "max_trials": 4,
    "max_concurrent_trials": 4,
    "stop_once": True,
    "max_length": {"batches": 4},
}


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("analysis") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=4)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def asha(cluster: Cluster) -> int:
    exp_id = cluster.submit(analysis_config(ASHA))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    return exp_id


def test_asha_rungs_count_what_the_trials_reported(cluster: Cluster, asha: int) -> None:
    progress = cluster.client.searcher_progress(asha)
    assert progress.searcher == "async_halving" and progress.unit == "batches"
    assert (progress.max_trials, progress.trials_created) == (4, 4)
    assert (progress.trials_completed, progress.trials_ended) == (4, 4)
    assert progress.progress == 1.0
    (bracket,) = progress.brackets
    assert (bracket.trials, bracket.max_trials) == (4, 4)
    low, high = bracket.rungs
    assert (low.length, high.length) == (2, 4)
    # What each trial validated at, from its metrics.
    reported: dict[int, list[float]] = {2: [], 4: []}
    for trial in cluster.client.trials(asha):
        for m in cluster.client.metrics(trial.id, "validation"):
            reported[m.steps_completed].append(m.metrics["loss"])
    assert low.reached == len(reported[2]) == 4
    assert low.promoted == high.reached == len(reported[4]) >= 1
    assert high.promoted == 0 and low.training == high.training == 0
    assert low.best == min(reported[2]) and high.best == min(reported[4])


def test_asha_rungs_count_what_the_trials_reported_while_the_search_runs(
    cluster: Cluster,
) -> None:
    # Promoting ASHA with rungs at 2 and 4 batches; every trial stops training at 2 batches, so
    # the search stays where it is: four results on the lowest rung, the promoted trials
    # training (stalled) towards the next, the others waiting to be promoted. A trial promoted
    # after it was let go resumes from its checkpoint at 2 (its result there stays its own).
    searcher = {**ASHA, "stop_once": False}
    exp_id = cluster.submit(analysis_config(searcher, stall_at=2, checkpoint_every=2))

    def four_results() -> rest.SearcherProgress | None:
        progress = cluster.client.searcher_progress(exp_id)
        return progress if progress.brackets[0].rungs[0].reached == 4 else None

    try:
        progress = wait_for("four results on the lowest rung", four_results, timeout=90)
        assert cluster.client.experiment(exp_id).state == "ACTIVE"
        (bracket,) = progress.brackets
        low, high = bracket.rungs
        assert (bracket.trials, progress.trials_created) == (4, 4)
        assert low.promoted == high.training >= 1 and low.training == 0
        assert high.reached == 0 and high.best is None
        reported = [
            m.metrics["loss"]
            for trial in cluster.client.trials(exp_id)
            for m in cluster.client.metrics(trial.id, "validation")
        ]
        assert len(reported) == 4 and low.best == min(reported)
        # Determined's estimate: 4 results of the 1.2 * 4 the search expects on that rung.
        assert progress.progress == pytest.approx(4 / 4.8)
        assert cluster.client.experiment(exp_id).progress == progress.progress
    finally:
        cluster.client.transition(exp_id, "kill")
        cluster.wait_state(exp_id, "CANCELED")


def test_progress_counts_what_the_training_trials_reported_of_their_operations(
    cluster: Cluster,
) -> None:
    # Two trials of 10 batches each, reporting progress every batch, stop at 5: half done.
    searcher = {"name": "random", "max_trials": 2, "max_length": {"batches": 10}}
    exp_id = cluster.submit(analysis_config(searcher, stall_at=5, report_progress=True))
    try:
        wait_for(
            "both trials half way",
            lambda: [t.progress for t in cluster.client.trials(exp_id)] == [0.5, 0.5],
            timeout=90,
        )
        # Both reports were taken in before the trials showed them: progress is settled.
        assert cluster.client.experiment(exp_id).progress == 0.5
        assert cluster.client.searcher_progress(exp_id).progress == 0.5
        (summary,) = [e for e in cluster.client.list_experiments().experiments if e.id == exp_id]
        assert summary.progress == 0.5 and summary.state == "ACTIVE"
    finally:
        cluster.client.transition(exp_id, "kill")
        cluster.wait_state(exp_id, "CANCELED")


def test_importance_ranks_the_searched_hyperparameters_of_the_finished_trials(
    cluster: Cluster, asha: int
) -> None:
    answer = cluster.client.hparam_importance(asha)
    assert answer.evaluator is rest.ImportanceEvaluator.PED_ANOVA, "Optuna's default"
    assert answer.metric == "loss" and answer.trials == 4 and answer.message is None
    names = [i.name for i in answer.importances]
    # Constants (step_seconds, checkpoint_every) are not searched.
    assert set(names) <= SEARCHED and names
    assert sum(i.importance for i in answer.importances) == pytest.approx(1.0)
    values = [i.importance for i in answer.importances]
    assert values == sorted(values, reverse=True)
    # The same finished trials, asked again, give the same answer.
    assert cluster.client.hparam_importance(asha) == answer


def test_an_experiment_without_finished_trials_says_why_it_has_no_importances(
    cluster: Cluster,
) -> None:
    searcher = {"name": "random", "max_trials": 3, "max_length": {"batches": 2}}
    exp_id = cluster.submit(analysis_config(searcher), activate=False)
    answer = cluster.client.hparam_importance(exp_id)
    assert answer.importances == [] and answer.trials == 0
    assert answer.message == (
        "importance needs at least 2 finished trials (COMPLETED, with a searcher metric); "
        "this experiment has 0"
    )
    progress = cluster.client.searcher_progress(exp_id)
    assert (progress.searcher, progress.max_trials, progress.trials_created) == ("random", 3, 0)
    assert progress.brackets == [], "random search has no rungs"


def test_a_bad_evaluator_or_experiment_is_refused_with_what_was_wrong(
    cluster: Cluster, asha: int
) -> None:
    headers = cluster.auth_headers()
    bad = httpx.get(
        f"{cluster.url}/api/v1/experiments/{asha}/hparam-importance",
        params={"evaluator": "shap"},
        headers=headers,
    )
    assert bad.status_code == 400 and "evaluator" in bad.text
    for path in ("searcher-progress", "hparam-importance"):
        missing = httpx.get(f"{cluster.url}/api/v1/experiments/999999/{path}", headers=headers)
        assert missing.status_code == 404 and "999999" in missing.json()["error"]["message"]


def test_the_curves_of_many_trials_in_one_read_are_each_trials_own_reports(
    cluster: Cluster, asha: int
) -> None:
    headers = cluster.auth_headers()
    ids = [t.id for t in cluster.client.trials(asha)]
    answer = httpx.get(
        f"{cluster.url}/api/v1/experiments/{asha}/metrics",
        params={"trial_ids": ",".join(map(str, ids))},
        headers=headers,
    ).raise_for_status()
    curves = rest.MetricSeriesList.model_validate(answer.json())
    # By default the searcher's metric of the validation group; the names are all reported.
    assert (curves.group, curves.metric) == ("validation", "loss")
    assert "validation/loss" in curves.names and curves.names == sorted(curves.names)
    assert [s.trial_id for s in curves.series] == ids
    for series in curves.series:
        reports = httpx.get(
            f"{cluster.url}/api/v1/trials/{series.trial_id}/metrics",
            params={"group": "validation"},
            headers=headers,
        ).json()["metrics"]
        assert series.steps == [r["steps_completed"] for r in reports]
        assert series.values == [r["metrics"]["loss"] for r in reports]
    # Downsampled to two points: the first and the last report of the longest series.
    group, name = next(n for n in curves.names if n.startswith("training/")).split("/")
    url = f"{cluster.url}/api/v1/experiments/{asha}/metrics"
    asked = {"trial_ids": ",".join(map(str, ids)), "group": group, "metric": name}
    every = httpx.get(url, params=asked, headers=headers).json()["series"]
    full = max(every, key=lambda s: len(s["steps"]))
    asked["trial_ids"] = str(full["trial_id"])
    (two,) = httpx.get(url, params={**asked, "max_points": 2}, headers=headers).json()["series"]
    assert len(full["steps"]) > 2, "the trial reported training metrics more than twice"
    assert two["steps"] == [full["steps"][0], full["steps"][-1]]
    assert two["values"] == [full["values"][0], full["values"][-1]]


def test_curves_of_trials_not_of_the_experiment_or_too_many_are_refused(
    cluster: Cluster, asha: int
) -> None:
    headers = cluster.auth_headers()
    url = f"{cluster.url}/api/v1/experiments/{asha}/metrics"
    other = httpx.get(url, params={"trial_ids": "999999"}, headers=headers)
    assert other.status_code == 404 and "999999" in other.json()["error"]["message"]
    many = ",".join(str(i) for i in range(1, rest.MAX_SERIES_TRIALS + 2))
    too_many = httpx.get(url, params={"trial_ids": many}, headers=headers)
    assert too_many.status_code == 400 and "at most" in too_many.json()["error"]["message"]
    for bad in ("1,x", "", "99999999999"):
        answer = httpx.get(url, params={"trial_ids": bad}, headers=headers)
        assert answer.status_code in (400, 422) and "trial_ids" in answer.text, bad
