"""An ASHA trial its searcher released to wait for promotion is WAITING at its rung, told apart
from a user's pause, on a real master and agent: in the REST trial, ``e describe``,
``e list-trials`` and ``trial describe``; pausing the experiment shows it PAUSED, activating it
WAITING again."""

from __future__ import annotations

import csv
import io

import pytest
import yaml

from assay import rest
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration

# Promoting ASHA, rungs at 2 and 4 batches; every trial stalls once it has trained 2 batches, so
# the promoted trials keep training (stalled) towards 4 and the others wait at rung 1.
CONFIG = yaml.safe_dump(
    {
        "name": "waiting",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "step_seconds": 0.001,
            "checkpoint_every": 2,
            "stall_at": 2,
            "x": {"type": "double", "minval": 1, "maxval": 10},
        },
        "searcher": {
            "name": "async_halving",
            "metric": "loss",
            "num_rungs": 2,
            "divisor": 2,
            "max_trials": 4,
            "max_concurrent_trials": 4,
            "max_length": {"batches": 4},
        },
        "max_restarts": 0,
    }
)


def _waiting(cluster: Cluster, exp_id: int) -> list[rest.Trial]:
    return [t for t in cluster.client.trials(exp_id) if t.state == "WAITING"]


def test_a_trial_waiting_for_promotion_is_waiting_at_its_rung_not_paused(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(CONFIG)
    try:
        waiting = wait_for("a trial waiting at rung 1", lambda: _waiting(cluster, exp_id), 120)
        trial = waiting[0]
        assert trial.waiting_at == "rung 1 of 2"
        assert cluster.client.experiment(exp_id).trials.get("WAITING", 0) >= 1
        described = cluster.cli("e", "describe", str(exp_id), check=True).stdout
        assert "WAITING (rung 1 of 2)" in described and "PAUSED" not in described
        rows = list(
            csv.DictReader(
                io.StringIO(
                    cluster.cli("e", "list-trials", str(exp_id), "--csv", check=True).stdout
                )
            )
        )
        assert {r["Trial"]: r["State"] for r in rows}[str(trial.id)] == "WAITING (rung 1 of 2)"
        heading = cluster.cli("trial", "describe", str(trial.id), check=True).stdout
        assert f"trial {trial.id} of experiment {exp_id}  WAITING (rung 1 of 2)" in heading

        # A user's pause shows as PAUSED: the waiting trial too.
        cluster.client.transition(exp_id, "pause")
        paused = cluster.client.trial(trial.id)
        assert (paused.state, paused.waiting_at) == ("PAUSED", None)
        assert "WAITING" not in cluster.cli("trial", "describe", str(trial.id), check=True).stdout
        cluster.wait_state(exp_id, "PAUSED")
        wait_for(
            "every trial paused",
            lambda: {t.state for t in cluster.client.trials(exp_id)} == {"PAUSED"},
            timeout=60,
        )

        # Activated, it waits for its searcher again (nothing promoted it meanwhile).
        cluster.client.transition(exp_id, "activate")
        again = cluster.client.trial(trial.id)
        assert (again.state, again.waiting_at) == ("WAITING", "rung 1 of 2")
    finally:
        cluster.client.transition(exp_id, "kill")
        cluster.wait_state(exp_id, "CANCELED")
    ended = {t.state for t in cluster.client.trials(exp_id)}
    assert ended == {"CANCELED"}
