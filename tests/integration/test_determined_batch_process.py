"""Determined's batch inference (``det.pytorch.experimental.torch_batch_process``) on a real
cluster: 40 numbered records shared between two ranks, every record processed once, their sum
reduced across the ranks, each rank's files stored under the output's uuid, and a paused run
going on after the last batch it recorded."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (pip install torch==2.13.0)", allow_module_level=True)

CONTEXT = CONTEXTS / "batch_process"
RECORDS = 40
BATCH_LINE = re.compile(r"rank (\d) batch (\d+) records \[([\d, ]*)\]")


def config(storage: Path, **hparams: Any) -> str:
    return yaml.safe_dump(
        {
            "name": "batch-inference",
            "entrypoint": "python3 -m determined.launch.torch_distributed python3 infer.py",
            "hyperparameters": {"batch_size": 3, "checkpoint_interval": 2, **hparams},
            "resources": {"slots_per_trial": 2},
            "searcher": {"name": "single", "metric": "records", "smaller_is_better": False},
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
            "max_restarts": 0,
        }
    )


def processed(cluster: Cluster, trial_id: int) -> list[tuple[int, int, list[int]]]:
    """(rank, batch index, records) of every batch the trial's runs processed, in log order."""
    found = []
    for line in cluster.trial_logs(trial_id):
        match = BATCH_LINE.search(line)
        if match:
            records = [int(r) for r in match[3].split(", ") if r]
            found.append((int(match[1]), int(match[2]), records))
    return found


def test_two_ranks_process_every_record_once_and_reduce_and_store_their_outputs(
    cluster: Cluster, tmp_path: Path
) -> None:
    storage = tmp_path / "store"
    exp_id = cluster.submit(config(storage), CONTEXT)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    (trial,) = cluster.client.trials(exp_id)
    tid = int(trial.id)
    assert exp.state == "COMPLETED", "\n".join(cluster.trial_logs(tid)[-40:])
    batches = processed(cluster, tid)
    # 14 batches of 3 (the last of 1): rank 0 takes the even ones, rank 1 the odd ones.
    assert sorted(r for _, _, records in batches for r in records) == list(range(RECORDS))
    assert {(rank, idx) for rank, idx, _ in batches} == {(r, i) for r in (0, 1) for i in range(7)}
    (result,) = cluster.client.metrics(tid, "validation")
    assert result.steps_completed == 7
    assert result.metrics == {"record_sum": sum(range(RECORDS)), "records": RECORDS}
    checkpoints = cluster.client.trial_checkpoints(tid)
    assert [c.steps_completed for c in checkpoints] == [2, 4, 6, 7]
    (output,) = [p for p in storage.iterdir() if (p / "rank_0").is_dir()]
    seen = [(output / f"rank_{r}" / "seen.txt").read_text().split() for r in (0, 1)]
    assert sorted(int(v) for v in seen[0] + seen[1]) == list(range(RECORDS))
    assert cluster.client.trial(tid).state == "COMPLETED"


def test_a_paused_run_goes_on_after_the_last_batch_it_recorded(
    cluster: Cluster, tmp_path: Path
) -> None:
    exp_id = cluster.submit(config(tmp_path / "store", batch_seconds=0.4), CONTEXT)
    tid = int(wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id)
    wait_for("a checkpoint", lambda: cluster.client.trial_checkpoints(tid), timeout=120)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(tid)).state == "PAUSED" and t
    )
    recorded = cluster.client.checkpoint(str(paused.latest_checkpoint)).steps_completed
    assert 2 <= recorded < 7 and recorded % 2 == 0
    before = len(processed(cluster, tid))
    cluster.client.transition(exp_id, "activate")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", "\n".join(cluster.trial_logs(tid)[-40:])
    resumed = processed(cluster, tid)[before:]
    assert min(idx for _, idx, _ in resumed) == recorded, "it starts after the recorded batches"
    assert {(rank, idx) for rank, idx, _ in resumed} == {
        (r, i) for r in (0, 1) for i in range(recorded, 7)
    }
    (result,) = cluster.client.metrics(tid, "validation")[-1:]
    assert result.steps_completed == 7
