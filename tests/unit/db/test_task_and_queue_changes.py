"""The changes the tasks, queue, identity and autoscaler sides make to rows, on SQLite and
PostgreSQL: each function of a ``db`` module leaves the row as its name says."""

from __future__ import annotations

from assay.db import (
    Database,
    Session,
    contexts,
    experiments,
    instances,
    jobs,
    tasks,
    tokens,
    users,
)
from assay.protocol import ExperimentState, InstanceState, TaskInstanceState, TaskState


def job(session: Session, job_id: str, *, pool: str = "default") -> str:
    return jobs.create(
        session,
        job_id=job_id,
        type="COMMAND",
        name=job_id,
        pool=pool,
        priority=42,
        weight=1.0,
        max_slots=None,
        submitted_at=1.0,
        owner="admin",
    ).id


def task(session: Session, instances_of_worker: int = 2) -> int:
    row = tasks.create(
        session,
        job=jobs.create(
            session,
            job_id="t1",
            type="COMMAND",
            name="t",
            pool="default",
            priority=42,
            weight=1.0,
            max_slots=None,
            submitted_at=1.0,
            owner="admin",
        ),
        kind="command",
        name="t",
        owner="admin",
        spec={"pool": "default", "roles": [{"name": "worker"}]},
        secrets={},
        context_id=None,
        roles=[("worker", instances_of_worker)],
        now=1.0,
    )
    return row.id


def start(session: Session, task_id: int, index: int, at: float) -> None:
    inst = tasks.instances(session, task_id)[index]
    tasks.start_run(
        session,
        inst,
        run=inst.runs + 1,
        allocation_id=f"task-{task_id}.worker.{index}.{inst.runs + 1}",
        agent_id="a1",
        host="10.0.0.1",
        slots=("0",),
        ports={"http": [20000]},
        cpu=1.5,
        memory_mb=512,
        at=at,
    )


def test_a_run_starts_ends_and_is_retried_as_its_instance_says(db: Database) -> None:
    task_id = db.run_sync(task)
    db.run_sync(lambda s: start(s, task_id, 0, 5.0))

    def ran(session: Session) -> None:
        inst = tasks.instances(session, task_id)[0]
        assert (inst.runs, inst.allocation_id, inst.state) == (
            1,
            f"task-{task_id}.worker.0.1",
            TaskInstanceState.RUNNING,
        )
        assert (inst.live, inst.started, inst.kill_requested) == (True, False, False)
        assert (inst.agent_id, inst.host, inst.slots, inst.ports) == (
            "a1",
            "10.0.0.1",
            ["0"],
            {"http": [20000]},
        )
        assert (inst.cpu, inst.memory_mb, inst.started_at, inst.ended_at) == (1.5, 512, 5.0, None)
        tasks.mark_started(session, inst)
        tasks.request_kill(session, inst)

    db.run_sync(ran)

    def requeued(session: Session) -> None:
        inst = tasks.instances(session, task_id)[0]
        assert (inst.started, inst.kill_requested) == (True, True)
        tasks.requeue(session, inst, exit_code=3, message="retry 1 of 2", at=9.0)

    db.run_sync(requeued)
    inst = db.run_sync(lambda s: tasks.instances(s, task_id)[0])
    assert (inst.live, inst.kill_requested, inst.exit_code, inst.ended_at) == (False, False, 3, 9.0)
    assert (inst.state, inst.retries, inst.message) == (
        TaskInstanceState.WAITING,
        1,
        "retry 1 of 2",
    )

    db.run_sync(lambda s: start(s, task_id, 0, 10.0))

    def ended(session: Session) -> None:
        inst = tasks.instances(session, task_id)[0]
        assert (inst.runs, inst.exit_code, inst.ended_at, inst.message) == (2, None, None, "")
        tasks.end_run(
            session, inst, exit_code=None, state=TaskInstanceState.FAILED, message="lost", at=12.0
        )

    db.run_sync(ended)
    inst = db.run_sync(lambda s: tasks.instances(s, task_id)[0])
    assert (inst.live, inst.exit_code, inst.ended_at) == (False, None, 12.0)
    assert (inst.state, inst.retries, inst.message) == (TaskInstanceState.FAILED, 1, "lost")


def test_a_task_keeps_its_first_start_and_end_and_a_new_attempt_clears_its_instances(
    db: Database,
) -> None:
    task_id = db.run_sync(task)

    def run_first_attempt(session: Session) -> None:
        row = tasks.get(session, task_id)
        assert row is not None
        tasks.mark_running(session, row, at=5.0)
        first, second = tasks.instances(session, task_id)
        tasks.end_run(
            session, first, exit_code=2, state=TaskInstanceState.FAILED, message="x", at=6.0
        )
        tasks.begin_retry(session, row, message="attempt 1 failed")
        tasks.start_attempt(session, row, [first, second])

    db.run_sync(run_first_attempt)
    row = db.run_sync(lambda s: tasks.get(s, task_id))
    assert row is not None
    assert (row.state, row.retrying, row.attempt, row.message) == (
        TaskState.WAITING,
        False,
        1,
        "attempt 1 failed",
    )
    insts = db.run_sync(lambda s: tasks.instances(s, task_id))
    assert [(i.state, i.retries, i.exit_code, i.message) for i in insts] == [
        (TaskInstanceState.WAITING, 0, None, "")
    ] * 2

    def end_twice(session: Session) -> None:
        row = tasks.get(session, task_id)
        assert row is not None
        tasks.mark_running(session, row, at=20.0)
        tasks.end(session, row, state=TaskState.FAILED, at=30.0, message="failed", exit_code=4)
        tasks.end(session, row, state=TaskState.STOPPED, at=40.0, message="stopped")

    db.run_sync(end_twice)
    row = db.run_sync(lambda s: tasks.get(s, task_id))
    assert row is not None
    assert (row.started_at, row.ended_at) == (5.0, 30.0), "the first start and end stay"
    assert (row.state, row.message, row.exit_code) == (TaskState.STOPPED, "stopped", 4)


def test_stopping_a_task_stops_only_its_waiting_instances(db: Database) -> None:
    task_id = db.run_sync(task)
    db.run_sync(lambda s: start(s, task_id, 0, 5.0))

    def stop(session: Session) -> None:
        row = tasks.get(session, task_id)
        assert row is not None
        tasks.request_stop(session, row, message="stopped by admin")
        tasks.stop_waiting(session, tasks.instances(session, task_id))

    db.run_sync(stop)
    row = db.run_sync(lambda s: tasks.get(s, task_id))
    assert row is not None
    assert (row.stop_requested, row.state, row.message) == (
        True,
        TaskState.STOPPING,
        "stopped by admin",
    )
    states = [i.state for i in db.run_sync(lambda s: tasks.instances(s, task_id))]
    assert states == [TaskInstanceState.RUNNING, TaskInstanceState.STOPPED]


def test_queue_changes_set_only_what_is_given_and_a_done_job_leaves_the_queue(
    db: Database,
) -> None:
    task_id = db.run_sync(task)
    db.run_sync(lambda s: [job(s, j) for j in ("j1", "j2")])

    def change(session: Session) -> None:
        j1, j2, t1 = (jobs.get(session, j) for j in ("j1", "j2", "t1"))
        assert j1 is not None and j2 is not None and t1 is not None
        jobs.update(session, j1, weight=2.5)
        jobs.update(session, j2, priority=7, pool="gpus")
        jobs.set_max_slots(session, j1, max_slots=4)
        jobs.move(session, j1, queue_position=0.5, priority=7, renumbered=[(j2, 0.25)])
        row = tasks.get(session, task_id)
        assert row is not None
        tasks.set_spec_pool(session, row, pool="gpus")
        jobs.mark_done(session, t1)

    db.run_sync(change)
    j1, j2 = (db.run_sync(lambda s, j=j: jobs.get(s, j)) for j in ("j1", "j2"))
    assert j1 is not None and j2 is not None
    assert (j1.priority, j1.weight, j1.pool, j1.max_slots, j1.queue_position) == (
        7,
        2.5,
        "default",
        4,
        0.5,
    )
    assert (j2.priority, j2.weight, j2.pool, j2.queue_position) == (7, 1.0, "gpus", 0.25)
    row = db.run_sync(lambda s: tasks.get(s, task_id))
    assert row is not None and row.spec == {"pool": "gpus", "roles": [{"name": "worker"}]}
    assert db.run_sync(lambda s: jobs.active_tasks(s, None)) == []

    def no_limit(session: Session) -> None:
        row = jobs.get(session, "j1")
        assert row is not None
        jobs.set_max_slots(session, row, max_slots=None)

    db.run_sync(no_limit)
    j1 = db.run_sync(lambda s: jobs.get(s, "j1"))
    assert j1 is not None and j1.max_slots is None, "None: no limit"


def test_an_experiments_config_takes_the_resources_its_job_changed(db: Database) -> None:
    def create(session: Session) -> int:
        ctx = contexts.stored(session, sha256="ab" * 32, size=3, files=1, data=b"tar", now=1.0)
        return experiments.create(
            session,
            name="e",
            description="",
            state=ExperimentState.ACTIVE,
            config={"name": "e", "resources": {"slots_per_trial": 2}},
            original_config="",
            context_id=ctx.id,
            job_id=job(session, "je"),
            seed=1,
            owner="admin",
            created_at=1.0,
        ).id

    exp_id = db.run_sync(create)
    db.run_sync(
        lambda s: experiments.merge_resources(
            s, experiments.require(s, exp_id), resources={"max_slots": None, "priority": 9}
        )
    )
    exp = db.run_sync(lambda s: experiments.require(s, exp_id))
    assert exp.config == {
        "name": "e",
        "resources": {"slots_per_trial": 2, "max_slots": None, "priority": 9},
    }


def test_a_users_changes_and_revoked_tokens_keep_what_was_not_asked(db: Database) -> None:
    def create(session: Session) -> tuple[int, list[int]]:
        user = users.create(session, username="u", password_hash="h1", admin=False, now=1.0)
        made = [
            tokens.create(
                session,
                user_id=user.id,
                digest=f"d{i}",
                kind=kind,
                description="",
                now=1.0,
                expires_at=None,
            ).id
            for i, kind in enumerate(("session", "session", "session", "access"))
        ]
        return user.id, made

    user_id, (own, other, revoked, access) = db.run_sync(create)

    def change(session: Session) -> None:
        user = users.get(session, user_id)
        assert user is not None
        users.update(session, user, admin=True)
        users.set_password(session, user, password_hash="h2")
        tokens.revoke(session, tokens.require(session, revoked), at=5.0)
        tokens.revoke(session, tokens.require(session, revoked), at=6.0)
        tokens.revoke_others(session, user_id=user_id, kind="session", keep=own, at=7.0)

    db.run_sync(change)
    user = db.run_sync(lambda s: users.get(s, user_id))
    assert user is not None
    assert (user.admin, user.active, user.password_hash) == (True, True, "h2")
    revoked_at = {
        t.id: t.revoked_at
        for t, _ in db.run_sync(lambda s: tokens.listed(s, user_id=None, kind=None))
    }
    assert revoked_at == {own: None, other: 7.0, revoked: 5.0, access: None}

    db.run_sync(lambda s: users.update(s, users.require(s, "u"), active=False))
    user = db.run_sync(lambda s: users.get(s, user_id))
    assert user is not None and (user.admin, user.active) == (True, False)


def test_an_instance_is_idle_from_when_its_agent_was_first_seen_free(db: Database) -> None:
    db.run_sync(lambda s: instances.launching(s, "i1", "auto", 1.0))

    def seen(busy: bool, at: float) -> tuple[str, float | None]:
        def step(session: Session) -> tuple[str, float | None]:
            row = instances.get(session, "i1")
            assert row is not None
            instances.seen_connected(session, row, busy=busy, at=at)
            return row.state, row.idle_since

        return db.run_sync(step)

    assert seen(busy=False, at=2.0) == (InstanceState.RUNNING, 2.0)
    assert seen(busy=False, at=3.0) == (InstanceState.RUNNING, 2.0)
    assert seen(busy=True, at=4.0) == (InstanceState.RUNNING, None)
    assert seen(busy=False, at=5.0) == (InstanceState.RUNNING, 5.0)

    def end(session: Session) -> None:
        row = instances.get(session, "i1")
        assert row is not None
        instances.mark_terminating(session, row)
        assert row.state == InstanceState.TERMINATING
        instances.command_failed(session, row, message="terminate command exited 1: no")
        instances.mark_terminated(session, row, at=9.0)

    db.run_sync(end)
    row = db.run_sync(lambda s: instances.get(s, "i1"))
    assert row is not None
    assert (row.state, row.ended_at, row.message) == (
        InstanceState.TERMINATED,
        9.0,
        "terminate command exited 1: no",
    )
