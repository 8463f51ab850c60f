"""What a piped ``assay e follow`` prints as an experiment changes (``ProgressLines``)."""

from __future__ import annotations

from typing import Any

from assay import rest
from assay.cli._follow import ProgressLines

NEEDS_4 = "needs 4 slots a trial; the largest agent in pool 'default' has 2"


def experiment(**fields: Any) -> rest.Experiment:
    raw: dict[str, Any] = {
        "id": 19,
        "name": "big",
        "description": "",
        "state": "ACTIVE",
        "archived": False,
        "progress": 0.0,
        "owner": "admin",
        "job_id": "j",
        "message": "",
        "created_at": 0.0,
        "started_at": None,
        "ended_at": None,
        "seed": 1,
        "searcher": {"name": "single", "metric": "loss", "smaller_is_better": True},
        "resource_pool": "default",
        "trials": {},
        "best_trial": None,
        "config": {},
        "original_config": "",
        **fields,
    }
    return rest.read_answer(rest.Experiment, raw)


def trial(state: str) -> rest.Trial:
    return rest.Trial(
        id=7, experiment_id=19, request_id="r", state=state, hparams={}, seed=1, restarts=0,
        runs=0, steps_completed=0, latest_checkpoint=None, best_validation=None, progress=0.0,
        early_stopped=False, early_exit=None, message="", created_at=0.0, started_at=None,
        ended_at=None,
    )  # fmt: skip


def test_piped_follow_says_why_the_experiment_waits_when_it_appears_or_changes() -> None:
    lines = ProgressLines(19)
    queued = [trial("QUEUED")]
    assert lines.update(experiment(waiting=NEEDS_4), queued) == [
        "trial 7 QUEUED",
        "experiment 19 ACTIVE 0%: trials 1 queued",
        f"waiting: {NEEDS_4}",
    ]
    assert lines.update(experiment(waiting=NEEDS_4), queued) == [], "said once"
    other = "needs 4 slots a trial; the largest agent in pool 'default' has 3"
    assert lines.update(experiment(waiting=other), queued) == [f"waiting: {other}"]
    assert lines.update(experiment(), [trial("RUNNING")]) == [
        "trial 7 RUNNING",
        "experiment 19 ACTIVE 0%: trials 1 running",
    ]


def test_piped_follow_shows_no_100_percent_before_the_experiment_ends() -> None:
    lines = ProgressLines(19)
    running = lines.update(experiment(progress=1.0), [trial("RUNNING")])
    assert running[-1] == "experiment 19 ACTIVE 99%: trials 1 running"
    ended = lines.update(experiment(progress=1.0, state="COMPLETED"), [trial("COMPLETED")])
    assert ended[-1] == "experiment 19 COMPLETED 100%: trials 1 completed"


def test_describe_shows_description_and_labels_when_set() -> None:
    from assay.cli._experiment_views import detail_lines

    assert detail_lines(experiment()) == []
    described = experiment(description="mnist [baseline]", labels=["a", "b"], waiting=NEEDS_4)
    assert detail_lines(described) == [
        "description: mnist [baseline]",
        "labels: a, b",
        f"waiting: {NEEDS_4}",
    ]
