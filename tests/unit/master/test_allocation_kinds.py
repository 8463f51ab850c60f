"""Every kind of work the master allocates passes the allocation seam's conformance kit
(:mod:`assay.master.testing`), on both databases: trials and tasks, and whatever comes next."""

from __future__ import annotations

import pytest
import yaml

from assay.config import JobSpecKind, load_task_config
from assay.db import Session, allocations, tasks
from assay.master import Master, Submission
from assay.master.kernel import AllocationKind, Held
from assay.master.tasks import TaskAllocations
from assay.master.testing import KindCase, check_allocation_kind
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import run

EXPERIMENT = yaml.safe_dump(
    {
        "name": "kit",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    }
)


def _trial_lines(master: Master, alloc_id: str) -> list[str]:
    alloc = master.db.run_sync(lambda s: allocations.get(s, alloc_id))
    assert alloc is not None
    return [e.line for e in run(master.reads.logs(alloc.trial_id)).logs]


def _task_lines(master: Master, alloc_id: str) -> list[str]:
    inst = master.db.run_sync(lambda s: tasks.instance_by_allocation(s, alloc_id))
    assert inst is not None
    return [e.line for e in run(master.tasks.logs(inst.task_id)).logs]


def test_trials_pass_the_allocation_kit(master: Master, context: bytes) -> None:
    case = KindCase(
        "trial",
        lambda m: m.experiments.create(ADMIN, Submission(EXPERIMENT, context)),
        _trial_lines,
    )
    check_allocation_kind(master, case)


def test_tasks_pass_the_allocation_kit(master: Master) -> None:
    spec = load_task_config("entrypoint: echo hi\n", kind=JobSpecKind.COMMAND)
    case = KindCase("task", lambda m: m.tasks.submit(ADMIN, spec, None), _task_lines)
    check_allocation_kind(master, case)


class _Greedy(TaskAllocations):
    """A broken kind: it says it holds every allocation on an agent, another kind's too."""

    def held_by(self, session: Session, agent_id: str) -> list[Held]:
        return [*super().held_by(session, agent_id), *self._others.held_by(session, agent_id)]

    def __init__(self, others: AllocationKind) -> None:
        super().__init__()
        self._others = others


def test_the_kit_catches_a_kind_that_claims_another_kinds_allocations(
    master: Master, context: bytes
) -> None:
    master.agents.kinds = (master.agents.kinds[0], _Greedy(master.agents.kinds[0]))
    case = KindCase(
        "trial",
        lambda m: m.experiments.create(ADMIN, Submission(EXPERIMENT, context)),
        _trial_lines,
    )
    with pytest.raises(AssertionError, match=r"held by \['trial', 'task'\]"):
        check_allocation_kind(master, case)
