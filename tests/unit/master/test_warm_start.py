"""Where a new experiment's trials start from (``searcher.source_checkpoint_uuid`` and
``source_trial_id``): checked at submission, and ``source_trial_id`` alone resolved to that
trial's latest checkpoint, as Determined does (it was taken and then ignored)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.db import checkpoints, trials
from assay.errors import InvalidConfig
from assay.master import Master, Submission
from assay.protocol import CheckpointState
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_gc_on_demand import _experiment


def _submit(master: Master, context: bytes, **searcher: Any) -> int:
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "searcher": {
                "name": "single",
                "metric": "loss",
                "max_length": {"batches": 5},
                **searcher,
            },
        }
    )
    return run(master.experiments.create(ADMIN, Submission(text, context))).id


def _refusal(master: Master, context: bytes, **searcher: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidConfig) as refused:
        _submit(master, context, **searcher)
    return [(d.path, d.message) for d in refused.value.details]


def test_a_source_trial_alone_starts_the_trials_from_its_latest_checkpoint(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    _, source_trial, uuids = _experiment(master, context, tmp_path / "ckpts")
    exp_id = _submit(master, context, source_trial_id=source_trial)
    with master.db.session() as s:
        (trial,) = trials.of_experiment(s, exp_id)
        assert trial.source_checkpoint == uuids[-1]
    stored = run(master.reads.experiment(exp_id)).config["searcher"]
    assert (stored["source_trial_id"], stored["source_checkpoint_uuid"]) == (
        source_trial,
        uuids[-1],
    )


def test_a_source_that_does_not_exist_or_disagrees_is_refused_at_submission(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    _, source_trial, uuids = _experiment(master, context, tmp_path / "ckpts")
    key = "searcher.source_checkpoint_uuid"
    for missing in ("0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10", "../../assay.db"):
        ((path, message),) = _refusal(master, context, source_checkpoint_uuid=missing)
        assert path == key and message.startswith(f"there is no checkpoint {missing};")
    ((path, message),) = _refusal(master, context, source_trial_id=10_000)
    assert (path, message) == ("searcher.source_trial_id", "there is no trial 10000")
    with master.db.session() as s:
        (other,) = trials.of_experiment(s, _submit(master, context))
    ((path, message),) = _refusal(
        master, context, source_trial_id=other.id, source_checkpoint_uuid=uuids[0]
    )
    assert path == key and f"belongs to trial {source_trial}, not to" in message
    with master.db.session() as s, s.begin():
        row = checkpoints.get(s, uuids[0])
        assert row is not None
        row.state = CheckpointState.DELETED
    ((path, message),) = _refusal(master, context, source_checkpoint_uuid=uuids[0])
    assert path == key and "is DELETED" in message


def test_a_source_trial_without_a_checkpoint_is_refused(master: Master, context: bytes) -> None:
    exp_id = _submit(master, context)
    with master.db.session() as s:
        (trial,) = trials.of_experiment(s, exp_id)
    ((path, message),) = _refusal(master, context, source_trial_id=trial.id)
    assert path == "searcher.source_trial_id"
    assert message.startswith(f"trial {trial.id} has no checkpoint to start from")
