"""``set gc-policy`` on the master: files first, rows after, a failed deletion left as it was,
what a live trial still needs never collected, the policy kept for the experiment's end."""

from __future__ import annotations

from pathlib import Path

import yaml

from assay import rest
from assay.db import checkpoints, experiments, metrics, trials
from assay.master import Master, Submission
from assay.master.artifacts._gc_demand import collect_now
from assay.protocol import CheckpointState, MetricReport
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run


def _experiment(master: Master, context: bytes, store: Path) -> tuple[int, int, list[str]]:
    """An experiment whose one trial (not ended) has checkpoints at steps 10, 20 and 30, the
    latest its resume point, with a validation loss at each step (best at 20)."""
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(store)},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
        }
    )
    exp_id = run(master.experiments.create(ADMIN, Submission(text, context))).id
    uuids = [f"00000000-0000-4000-8000-{steps:012d}" for steps in (10, 20, 30)]
    with master.db.session() as s, s.begin():
        trial = trials.of_experiment(s, exp_id)[0]
        for uuid, steps, loss in zip(uuids, (10, 20, 30), (0.5, 0.1, 0.9), strict=True):
            (store / uuid).mkdir(parents=True)
            (store / uuid / "weights").write_text(uuid)
            checkpoints.create(
                s,
                uuid=uuid,
                trial_id=trial.id,
                experiment_id=exp_id,
                allocation_id="a",
                steps_completed=steps,
                metadata={},
                resources={"weights": len(uuid)},
                size=len(uuid),
                reported_at=1.0,
            )
            metrics.insert(s, trial.id, 0, [MetricReport("validation", steps, {"loss": loss})], 1.0)
        trial.latest_checkpoint = uuids[-1]
        trial_id = trial.id
    return exp_id, trial_id, uuids


def _states(master: Master, exp_id: int) -> dict[str, str]:
    with master.db.session() as s:
        return {c.uuid: c.state for c in checkpoints.of(s, experiment_id=exp_id)}


def _zero(**kw: object) -> rest.GcPolicy:
    return rest.GcPolicy(save_experiment_best=0, save_trial_best=0, save_trial_latest=0, **kw)


def test_zero_policy_deletes_files_then_rows_but_keeps_a_live_trials_resume_point(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    done = run(collect_now(master.core, ADMIN, exp_id, _zero()))
    assert [c.uuid for c in done.checkpoints] == uuids[:2]
    assert [c.metric for c in done.checkpoints] == [0.5, 0.1]
    assert done.failed == {}
    assert not (store / uuids[0]).exists() and not (store / uuids[1]).exists()
    assert (store / uuids[2] / "weights").exists()
    assert _states(master, exp_id) == {
        uuids[0]: CheckpointState.DELETED,
        uuids[1]: CheckpointState.DELETED,
        uuids[2]: CheckpointState.ACTIVE,
    }
    with master.db.session() as s:
        stored = experiments.require(s, exp_id).config["checkpoint_storage"]
    assert (stored["save_experiment_best"], stored["save_trial_best"]) == (0, 0)
    assert stored["save_trial_latest"] == 0 and stored["host_path"] == str(store)


def test_a_dry_run_and_omitted_numbers_change_nothing(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    # The config's defaults (trial best 1, latest 1) keep step 20 (best) and 30 (latest).
    preview = run(collect_now(master.core, ADMIN, exp_id, rest.GcPolicy(dry_run=True)))
    assert [c.uuid for c in preview.checkpoints] == [uuids[0]]
    assert (preview.save_experiment_best, preview.save_trial_best) == (0, 1)
    assert all((store / u).exists() for u in uuids)
    assert set(_states(master, exp_id).values()) == {CheckpointState.ACTIVE}


def test_a_checkpoint_whose_files_cannot_be_deleted_keeps_its_row_and_is_named(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    # A checkpoint directory that is a link: storage refuses to remove it (as root too).
    elsewhere = tmp_path / "elsewhere"
    (store / uuids[1]).rename(elsewhere)
    (store / uuids[1]).symlink_to(elsewhere, target_is_directory=True)
    done = run(collect_now(master.core, ADMIN, exp_id, _zero()))
    assert [c.uuid for c in done.checkpoints] == [uuids[0]]
    assert list(done.failed) == [uuids[1]]
    assert _states(master, exp_id)[uuids[1]] == CheckpointState.ACTIVE
    assert (store / uuids[1] / "weights").read_text() == uuids[1]
    assert [p.name for p in store.iterdir() if p.name.startswith(".deleting")] == []
