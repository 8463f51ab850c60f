"""The model registry on the master: a registered checkpoint survives every garbage collection
(on demand and at the experiment's end) and blocks its experiment's deletion; only kept
checkpoints are registered; owners change what they own."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import rest
from assay.db import checkpoints, experiments, trials
from assay.errors import Conflict, Forbidden, InvalidRequest, NotFound
from assay.master import Actor, Master
from assay.master.artifacts._gc import mark_for_collection
from assay.master.artifacts._gc_demand import collect_now
from assay.master.kernel._tx import Tx
from assay.protocol import CheckpointState, ExperimentState, TrialState
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run
from tests.unit.master.test_gc_on_demand import _experiment, _states, _zero

ALICE = Actor(user_id=2, username="alice", admin=False, token_id=2)
BOB = Actor(user_id=3, username="bob", admin=False, token_id=3)


def _model(master: Master, actor: Actor, name: str = "mnist") -> rest.Model:
    return run(master.models.create(actor, rest.ModelCreate(name=name, description="digits")))


def _register(master: Master, actor: Actor, name: str, uuid: str) -> rest.ModelVersion:
    body = rest.ModelVersionCreate(checkpoint_uuid=uuid)
    return run(master.models.register(actor, name, body))


def _end(master: Master, exp_id: int) -> None:
    with master.db.session() as s, s.begin():
        experiments.require(s, exp_id).state = ExperimentState.COMPLETED
        for t in trials.of_experiment(s, exp_id):
            t.state = TrialState.COMPLETED


def test_gc_on_demand_and_at_the_end_keep_a_registered_checkpoint_and_say_why(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    _model(master, ALICE)
    version = _register(master, ALICE, "mnist", uuids[0])
    assert (version.version, version.checkpoint.uuid) == (1, uuids[0])
    assert version.checkpoint.model_versions == [rest.ModelVersionRef(model="mnist", version=1)]

    preview = run(collect_now(master.core, ADMIN, exp_id, _zero(dry_run=True)))
    assert [c.uuid for c in preview.checkpoints] == [uuids[1]]
    assert preview.registered == {uuids[0]: [rest.ModelVersionRef(model="mnist", version=1)]}
    done = run(collect_now(master.core, ADMIN, exp_id, _zero()))
    assert [c.uuid for c in done.checkpoints] == [uuids[1]] and uuids[0] in done.registered
    assert (store / uuids[0] / "weights").read_text() == uuids[0]
    assert _states(master, exp_id)[uuids[0]] == CheckpointState.ACTIVE

    # At the experiment's end (the policy is now 0 0 0), only the unregistered one goes.
    _end(master, exp_id)

    def end(tx: Tx) -> None:
        mark_for_collection(tx, experiments.require(tx.session, exp_id))

    run(master.core.transact(end))
    assert _states(master, exp_id) == {
        uuids[0]: CheckpointState.ACTIVE,
        uuids[1]: CheckpointState.DELETED,
        uuids[2]: CheckpointState.DELETING,
    }
    listed = run(master.reads.experiment_checkpoints(exp_id)).checkpoints
    assert [c.model_versions for c in listed] == [version.checkpoint.model_versions, [], []]


def test_deleting_an_experiment_is_refused_while_a_version_holds_its_checkpoint(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    exp_id, _, uuids = _experiment(master, context, store)
    _model(master, ALICE)
    _register(master, ALICE, "mnist", uuids[2])
    _end(master, exp_id)
    with pytest.raises(Conflict, match=rf"checkpoint {uuids[2]} is mnist v1\); delete those"):
        run(master.experiments.delete(ADMIN, exp_id))
    assert all((store / u).exists() for u in uuids)
    assert set(_states(master, exp_id).values()) == {CheckpointState.ACTIVE}

    run(master.models.delete_version(ALICE, "mnist", 1))
    gone = run(master.experiments.delete(ADMIN, exp_id))
    assert gone.checkpoints == 3 and not any((store / u).exists() for u in uuids)


def test_only_a_kept_checkpoint_is_registered_and_only_owners_change_a_model(
    master: Master, context: bytes, tmp_path: Path
) -> None:
    exp_id, _, uuids = _experiment(master, context, tmp_path / "ckpts")
    _model(master, ALICE)
    with pytest.raises(NotFound, match="checkpoint nope not found"):
        _register(master, ALICE, "mnist", "nope")
    run(collect_now(master.core, ADMIN, exp_id, _zero()))
    with pytest.raises(
        InvalidRequest, match=f"checkpoint {uuids[0]} was deleted \\(state DELETED\\)"
    ):
        _register(master, ALICE, "mnist", uuids[0])
    with pytest.raises(Forbidden, match="model 'mnist' belongs to alice"):
        _register(master, BOB, "mnist", uuids[2])
    with pytest.raises(Forbidden):
        run(master.models.change(BOB, "mnist", rest.ModelChange(description="mine")))
    changed = run(master.models.change(ADMIN, "mnist", rest.ModelChange(labels=["a", "a", "b"])))
    assert changed.labels == ["a", "b"] and changed.description == "digits"
    assert changed.versions == 0 and changed.latest_version is None
    with pytest.raises(Conflict, match="already exists"):
        _model(master, BOB)

    _register(master, ALICE, "mnist", uuids[2])
    listed = run(master.models.versions("mnist"))
    assert [v.version for v in listed.versions] == [1] and listed.model.latest_version == 1
    with pytest.raises(Forbidden):
        run(master.models.delete(BOB, "mnist"))
    deleted = run(master.models.delete(ALICE, "mnist"))
    assert deleted == rest.ModelDeleted(name="mnist", versions=1)
    with pytest.raises(NotFound):
        run(master.models.get("mnist"))
    with master.db.session() as s:
        assert checkpoints.require(s, uuids[2]).state == CheckpointState.ACTIVE
