"""The repositories on SQLite and PostgreSQL: rows they create, and the statements that must
hold under repeats and concurrency."""

from __future__ import annotations

import contextlib
import gc
import math
from typing import Any

import pytest

from assay.db import (
    Database,
    Session,
    agents,
    allocations,
    checkpoints,
    cluster,
    contexts,
    experiments,
    jobs,
    logs,
    metrics,
    trials,
)
from assay.errors import NotFound
from assay.protocol import (
    AllocationState,
    ExperimentState,
    LogEntry,
    MetricReport,
    TrialState,
)
from tests.unit.db.statements import statements


def experiment(session: Session, name: str = "e", config: dict[str, Any] | None = None) -> int:
    ctx = contexts.stored(session, sha256="ab" * 32, size=3, files=1, data=b"tar", now=1.0)
    job = jobs.create(
        session,
        job_id=f"job-{name}",
        type="EXPERIMENT",
        name=name,
        pool="default",
        priority=42,
        weight=1.0,
        max_slots=None,
        submitted_at=1.0,
        owner="admin",
    )
    exp = experiments.create(
        session,
        name=name,
        description="",
        state=ExperimentState.ACTIVE,
        config=config or {"resources": {"slots_per_trial": 2}},
        original_config="",
        context_id=ctx.id,
        job_id=job.id,
        seed=1,
        owner="admin",
        created_at=1.0,
    )
    return exp.id


def trial(session: Session, exp_id: int, request: str = "r1") -> int:
    row = trials.create(
        session,
        experiment_id=exp_id,
        request_id=request,
        hparams={"lr": 0.1},
        seed=7,
        state=TrialState.QUEUED,
        source_checkpoint=None,
        created_at=2.0,
    )
    return row.id


def checkpointed(session: Session, *uuids: str) -> int:
    """A new trial of a new experiment with one checkpoint per uuid (steps 1, 2...); its id."""
    exp_id = experiment(session)
    trial_id = trial(session, exp_id)
    for steps, uuid in enumerate(uuids, start=1):
        checkpoints.create(
            session,
            uuid=uuid,
            trial_id=trial_id,
            experiment_id=exp_id,
            allocation_id="a",
            steps_completed=steps,
            metadata={},
            resources={},
            size=0,
            reported_at=1.0,
        )
    return trial_id


def test_a_context_is_stored_once_per_content_and_jobs_queue_in_order(db: Database) -> None:
    first, second = db.run_sync(lambda s: (experiment(s, "a"), experiment(s, "b")))

    def read(session: Session) -> tuple[int, int, float, float]:
        a, b = experiments.require(session, first), experiments.require(session, second)
        job_a, job_b = jobs.get(session, a.job_id), jobs.get(session, b.job_id)
        assert job_a is not None and job_b is not None
        return a.context_id, b.context_id, job_a.queue_position, job_b.queue_position

    ctx_a, ctx_b, pos_a, pos_b = db.run_sync(read)
    assert ctx_a == ctx_b
    assert pos_b > pos_a


def test_require_names_what_is_missing(db: Database) -> None:
    with pytest.raises(NotFound, match="experiment 404 not found"):
        db.run_sync(lambda s: experiments.require(s, 404))
    with pytest.raises(NotFound, match="trial 9 not found"):
        db.run_sync(lambda s: trials.require(s, 9))


def test_queued_trials_come_with_their_experiment_and_job_and_are_counted_per_experiment(
    db: Database,
) -> None:
    exp_id = db.run_sync(experiment)
    db.run_sync(lambda s: [trial(s, exp_id, r) for r in ("r1", "r2")])
    queued = db.run_sync(trials.queued)
    assert [(t.request_id, e.id) for t, e, _ in queued] == [("r1", exp_id), ("r2", exp_id)]
    assert db.run_sync(
        lambda s: [(e.id, n) for e, n in trials.queued_by_experiment(s, "default")]
    ) == [(exp_id, 2)]
    assert db.run_sync(lambda s: trials.queued_by_experiment(s, "other")) == []
    assert db.run_sync(lambda s: trials.counts(s, [exp_id])) == {exp_id: {"QUEUED": 2}}


def test_steps_completed_and_best_validation_only_ever_improve(db: Database) -> None:
    exp_id = db.run_sync(experiment)
    trial_id = db.run_sync(lambda s: trial(s, exp_id))
    told = [
        db.run_sync(lambda s, n=steps: trials.record_reported(s, trial_id, n))
        for steps in (10, 5, 30, 20)
    ]
    assert told == [(exp_id, 10, None), (exp_id, 10, None), (exp_id, 30, None), (exp_id, 30, None)]
    told = [
        db.run_sync(lambda s, v=v: trials.record_reported(s, trial_id, 0, (-v, v)))
        for v in (0.5, 0.7, 0.2)
    ]
    assert [best for _, _, best in told] == [-0.5, -0.5, -0.2], "the value kept with its score"
    row = db.run_sync(lambda s: trials.require(s, trial_id))
    assert (row.steps_completed, row.best_validation, row.best_score) == (30, -0.2, 0.2)
    assert db.run_sync(lambda s: trials.record_reported(s, trial_id + 1000, 1)) is None


def test_a_report_brings_the_sessions_copy_of_its_trial_up_to_date(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))

    def report(session: Session) -> tuple[int, float | None]:
        held = trials.require(session, trial_id)
        trials.record_reported(session, trial_id, 7, (0.25, 0.25))
        return held.steps_completed, held.best_validation

    assert db.run_sync(report) == (7, 0.25)


def test_many_trials_steps_are_raised_in_one_statement_and_never_lowered(db: Database) -> None:
    exp_id = db.run_sync(experiment)
    first, second = db.run_sync(lambda s: [trial(s, exp_id, r) for r in ("r1", "r2")])
    db.run_sync(lambda s: trials.record_reported(s, first, 20, (-0.5, 0.5)))

    def report(session: Session) -> tuple[dict[int, tuple[int, int, float | None]], int]:
        held = trials.require(session, second)
        told = trials.record_steps(session, {first: 5, second: 12, second + 1000: 3})
        return told, held.steps_completed

    with statements(db, "UPDATE") as updates:
        told, held = db.run_sync(report)
    assert len(updates) == 1
    assert told == {first: (exp_id, 20, -0.5), second: (exp_id, 12, None)}
    assert held == 12, "the session's copy of a trial is brought up to date"
    assert db.run_sync(lambda s: trials.record_steps(s, {})) == {}


def test_many_trials_best_validations_are_kept_in_one_statement_each_only_where_beaten(
    db: Database,
) -> None:
    exp_id = db.run_sync(experiment)
    first, second, third = db.run_sync(lambda s: [trial(s, exp_id, f"r{i}") for i in range(3)])
    db.run_sync(lambda s: trials.record_reported(s, first, 20, (-0.5, 0.5)))
    best = {first: (-0.6, 0.6), second: (0.3, 0.3)}  # first's is worse than its stored one
    with statements(db, "UPDATE") as updates:
        told = db.run_sync(lambda s: trials.record_steps(s, {first: 5, second: 6, third: 7}, best))
    assert len(updates) == 1
    assert told == {first: (exp_id, 20, -0.5), second: (exp_id, 6, 0.3), third: (exp_id, 7, None)}
    told = db.run_sync(lambda s: trials.record_steps(s, {first: 1}, {first: (-0.9, 0.1)}))
    assert told == {first: (exp_id, 20, -0.9)}


def test_the_best_trial_of_each_experiment_is_the_one_best_of_finds(db: Database) -> None:
    # Experiment a: a tie on score goes to the older trial. b: one scored trial. c: none scored.
    scores = {"a": [0.3, 0.1, 0.1], "b": [None, 0.9], "c": [None]}
    ids: dict[str, int] = {}

    def fill(session: Session) -> None:
        for name, values in scores.items():
            ids[name] = experiment(session, name)
            for i, value in enumerate(values):
                trial_id = trial(session, ids[name], f"r{i}")
                if value is not None:
                    trials.record_reported(session, trial_id, 0, (value, value))

    db.run_sync(fill)

    def best(session: Session) -> tuple[dict[int, int], dict[int, int | None]]:
        each = trials.best_of_each(session, list(ids.values()))
        one = {exp_id: trials.best_of(session, exp_id) for exp_id in ids.values()}
        return (
            {exp_id: row.id for exp_id, row in each.items()},
            {exp_id: row.id if row else None for exp_id, row in one.items() if row},
        )

    each, one = db.run_sync(best)
    assert each == one
    assert set(each) == {ids["a"], ids["b"]}
    assert db.run_sync(lambda s: trials.best_of_each(s, [])) == {}


def test_a_repeated_metric_report_is_stored_once_and_nan_survives(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))
    reports = [
        MetricReport("validation", 10, {"loss": math.nan, "per_class": [0.5, -math.inf]}, 0.0),
        MetricReport("training", 10, {"loss": 1.0}, 5.0),
    ]
    for _ in range(2):
        db.run_sync(lambda s: metrics.insert(s, trial_id, 1, reports, now=9.0))
    rows = db.run_sync(lambda s: metrics.series(s, trial_id, None))
    assert sorted((m.group, m.values, m.reported_at) for m in rows) == [
        ("training", {"loss": 1.0}, 5.0),
        ("validation", {"loss": "nan", "per_class": [0.5, "-inf"]}, 9.0),
    ]


def test_many_runs_reports_are_stored_in_one_statement_and_a_repeat_among_them_once(
    db: Database,
) -> None:
    exp_id = db.run_sync(experiment)
    first, second = db.run_sync(lambda s: [trial(s, exp_id, r) for r in ("r1", "r2")])
    runs = [
        (
            first,
            1,
            [MetricReport("training", 1, {"loss": 1.0}), MetricReport("training", 2, {})],
            3.0,
        ),
        (second, 1, [MetricReport("validation", 5, {"loss": math.inf})], 4.0),
        (first, 1, [MetricReport("training", 2, {"loss": 9.0})], 5.0),  # a repeat: not stored
    ]
    with statements(db, "INSERT") as inserts:
        db.run_sync(lambda s: metrics.insert_runs(s, runs))
    assert len(inserts) == 1

    def stored(trial_id: int) -> list[tuple[str, int, dict[str, Any], float]]:
        rows = db.run_sync(lambda s: metrics.series(s, trial_id, None))
        return sorted((m.group, m.steps_completed, m.values, m.reported_at) for m in rows)

    assert stored(first) == [("training", 1, {"loss": 1.0}, 3.0), ("training", 2, {}, 3.0)]
    assert stored(second) == [("validation", 5, {"loss": "inf"}, 4.0)]


def test_a_long_series_read_in_parts_is_the_whole_series_in_order(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))
    reports = [MetricReport("training", step, {"loss": 1.0 / step}, 1.0) for step in range(1, 51)]
    reports += [MetricReport("validation", step, {"loss": 0.5}, 1.0) for step in (10, 20, 30)]
    db.run_sync(lambda s: metrics.insert(s, trial_id, 1, reports, now=1.0))

    def both(group: str | None) -> tuple[list[list[tuple[str, int]]], list[tuple[str, int]]]:
        def read(s: Session) -> tuple[list[list[tuple[str, int]]], list[tuple[str, int]]]:
            parts = [
                [(m.group, m.steps_completed) for m in part]
                for part in metrics.series_in_parts(s, trial_id, group, size=7)
            ]
            return parts, [(m.group, m.steps_completed) for m in metrics.series(s, trial_id, group)]

        return db.run_sync(read)

    parts, whole = both(None)
    assert [len(p) for p in parts] == [7] * 7 + [4]  # 53 rows, 7 at a time
    assert [row for part in parts for row in part] == whole
    assert [step for _, step in whole] == sorted(step for _, step in whole)
    parts, whole = both("validation")
    assert parts == [whole]
    assert whole == [("validation", 10), ("validation", 20), ("validation", 30)]


def test_checkpoint_metadata_keeps_non_finite_numbers_at_any_depth(db: Database) -> None:
    # PostgreSQL's json type refuses NaN; this was a 500 on a checkpoint report.
    def report(session: Session) -> None:
        exp_id = experiment(session)
        checkpoints.create(
            session,
            uuid="u1",
            trial_id=trial(session, exp_id),
            experiment_id=exp_id,
            allocation_id="1.1",
            steps_completed=3,
            metadata={"best": {"loss": math.nan, "bounds": [math.inf, 1.0]}},
            resources={"model.pt": 10},
            size=10,
            reported_at=1.0,
        )

    db.run_sync(report)
    stored = db.run_sync(lambda s: checkpoints.require(s, "u1"))
    assert stored.meta == {"best": {"loss": "nan", "bounds": ["inf", 1.0]}}


def test_live_allocations_are_found_by_agent_and_hold_their_slots(db: Database) -> None:
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))

    def start(session: Session) -> None:
        allocations.create(
            session,
            allocation_id=f"{trial_id}.1",
            trial_id=trial_id,
            run=1,
            pool="default",
            slots={"a1": ["0", "1"], "a2": []},
            state=AllocationState.ASSIGNED,
            token="tok",
            created_at=3.0,
        )

    db.run_sync(start)
    assert db.run_sync(allocations.used_slots) == {
        "a1": {"0", "1"},
        "a2": set(),
    }  # a2 runs zero-slot work
    assert [a.id for a in db.run_sync(lambda s: allocations.on_agent(s, "a2"))] == [f"{trial_id}.1"]
    found = db.run_sync(lambda s: allocations.by_token(s, "tok"))
    assert found is not None and found.state == AllocationState.ASSIGNED


def test_an_agents_live_allocations_are_found_whatever_characters_its_id_holds(
    db: Database,
) -> None:
    """The database narrows by the id's text in the slots' JSON: an id that is a prefix of
    another's, or holds LIKE's wildcards, quotes or non-ASCII letters, finds its own only."""
    ids = ["n1", "n10", "a%b", "a_b", 'q"uote', "back\\slash", "zoë"]
    trial_id = db.run_sync(lambda s: trial(s, experiment(s)))

    def start(session: Session) -> None:
        for i, agent_id in enumerate(ids):
            allocations.create(
                session,
                allocation_id=f"{trial_id}.{i}",
                trial_id=trial_id,
                run=i + 1,
                pool="default",
                slots={agent_id: ["0"]},
                state=AllocationState.RUNNING,
                token=f"tok{i}",
                created_at=3.0,
            )

    db.run_sync(start)
    for i, agent_id in enumerate(ids):
        found = db.run_sync(lambda s, a=agent_id: [x.id for x in allocations.on_agent(s, a)])
        assert found == [f"{trial_id}.{i}"], agent_id
    assert db.run_sync(lambda s: allocations.on_agent(s, "a")) == []


def test_a_starting_master_sees_every_agent_disconnected_and_keeps_its_identity(
    db: Database,
) -> None:
    def connect(session: Session, agent_id: str) -> None:
        agents.connected(
            session,
            agent_id,
            pool="default",
            labels=[],
            slots=[{"id": "0", "type": "cpu"}],
            address="",
            version="",
            now=1.0,
        )

    db.run_sync(lambda s: [connect(s, a) for a in ("a1", "a2")])
    first = db.run_sync(lambda s: cluster.identity(s, 1.0))
    db.run_sync(agents.disconnect_all)
    assert [a.connected for a in db.run_sync(agents.registered)] == [False, False]
    assert db.run_sync(lambda s: cluster.identity(s, 2.0)) == first


def test_logs_come_back_in_order_after_an_id(db: Database) -> None:
    entries = [LogEntry("1.1", 1, f"line {i}", stream="stdout-and-more") for i in range(5)]
    db.run_sync(lambda s: logs.insert(s, entries))
    first = db.run_sync(lambda s: logs.after(s, 1, 0, 2))
    rest = db.run_sync(lambda s: logs.after(s, 1, first[-1].id, 100))
    assert [e.line for e in [*first, *rest]] == [f"line {i}" for i in range(5)]
    assert first[0].stream == "stdout-a", "cut to the column's width"


def test_log_lines_come_back_as_written_whatever_they_hold(db: Database) -> None:
    """PostgreSQL takes lines as a COPY stream, whose text format escapes tabs, newlines and
    backslashes: each comes back as it was (a NUL as U+FFFD, which PostgreSQL's text cannot
    hold); a job's lines keep their task; lines of a transaction rolled back are not kept."""
    odd = [
        "tab\there",
        "new\nline",
        "back\\slash \\N",
        "\\N",
        "carriage\rreturn",
        "\\.",
        "",
        "nul\x00end",
        "é ✓ 𝄞",
        "x" * 70_000,
    ]
    trial_lines = [LogEntry("1.1", 1, line, time=float(i)) for i, line in enumerate(odd)]
    job_lines = [LogEntry("task-7.1", 0, "a job's line", stream="stderr", rank=2, time=9.5)]
    db.run_sync(lambda s: logs.insert(s, trial_lines))
    db.run_sync(lambda s: logs.insert(s, job_lines, task_id=7))

    def failing(session: Session) -> None:
        logs.insert(session, [LogEntry("1.1", 1, "never kept")])
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        db.run_sync(failing)
    stored = db.run_sync(lambda s: logs.after(s, 1, 0, 100))
    expected = [line.replace("\x00", "\ufffd") for line in odd]
    assert [(e.line, e.time, e.task_id) for e in stored] == [
        (line, float(i), None) for i, line in enumerate(expected)
    ]
    (job,) = db.run_sync(lambda s: logs.after(s, 0, 0, 100))
    assert (job.task_id, job.rank, job.stream, job.time) == (7, 2, "stderr", 9.5)
    if not db.is_sqlite:  # SQLite keeps a text of any length in a VARCHAR(64)
        refused = [LogEntry("x" * 65, 1, "an allocation id past its column")]
        with pytest.raises(Exception, match="too long"):
            db.run_sync(lambda s: logs.insert(s, [*trial_lines[:1], *refused]))
        db.run_sync(lambda s: logs.insert(s, [LogEntry("1.1", 1, "after a refused stream")]))
        after = db.run_sync(lambda s: logs.after(s, 1, stored[-1].id, 100))
        assert [e.line for e in after] == ["after a refused stream"]


def test_a_deleted_experiments_and_trials_ids_are_never_handed_out_again(db: Database) -> None:
    def newest_deleted(session: Session) -> tuple[int, int]:
        first = experiment(session, "first")
        trial(session, first)
        newest = experiment(session, "newest")
        last_trial = trial(session, newest, "r2")
        experiments.delete(session, newest)
        return newest, last_trial

    gone, gone_trial = db.run_sync(newest_deleted)

    def create_again(session: Session) -> tuple[int, int]:
        again = experiment(session, "again")
        return again, trial(session, again, "r3")

    again, again_trial = db.run_sync(create_again)
    assert again > gone and again_trial > gone_trial


def _selects(db: Database) -> contextlib.AbstractContextManager[list[str]]:
    """The SELECT statements run while in it."""
    return statements(db, "SELECT")


def test_a_changed_experiment_is_told_as_left_without_reading_it_again(db: Database) -> None:
    """The session holds rows weakly: a changed experiment nobody refers to any more is still
    the one :func:`changes.changed` returns, with its change, and no statement reads it back."""
    from assay.db import changes

    exp_id = db.run_sync(experiment)

    def change(session: Session) -> tuple[list[tuple[int, float]], list[str]]:
        changes.track(session)
        row = experiments.require(session, exp_id)
        row.progress = 0.5
        session.flush()
        del row
        gc.collect()
        with _selects(db) as selects:
            found = changes.changed(session)
        return [(e.id, e.progress) for e in found.experiments], selects

    assert db.run_sync(change) == ([(exp_id, 0.5)], [])


def test_a_row_read_once_in_a_transaction_is_not_read_again_there(db: Database) -> None:
    """The session holds rows weakly: a tracked transaction holds every row it loaded, so a
    later step finds the row a former one read and let go."""
    from assay.db import changes

    exp_id = db.run_sync(experiment)
    trial_id = db.run_sync(lambda s: trial(s, exp_id))

    def twice(session: Session) -> list[str]:
        changes.track(session)
        trials.require(session, trial_id)
        experiments.require(session, exp_id)
        gc.collect()
        with _selects(db) as selects:
            trials.require(session, trial_id)
            experiments.require(session, exp_id)
        return selects

    assert db.run_sync(twice) == []


def test_changed_trials_are_told_as_stored_with_steps_another_transaction_moved(
    db: Database,
) -> None:
    """Metric reports raise a trial's steps outside the master's lock: a transaction that
    changed the trial tells viewers the steps stored when it ends, not the ones it loaded, and
    reads all its changed trials in one statement."""
    from assay.db import changes

    exp_id = db.run_sync(experiment)
    ids = db.run_sync(lambda s: [trial(s, exp_id, f"r{i}") for i in range(3)])

    def change(session: Session) -> tuple[list[tuple[int, str, int]], list[str]]:
        changes.track(session)
        rows = [trials.require(session, i) for i in ids]
        db.run_sync(lambda other: trials.record_reported(other, ids[0], 100))
        for row in rows:
            row.state = TrialState.RUNNING
        session.flush()
        with _selects(db) as selects:
            found = changes.changed(session)
        return [(t.id, t.state, t.steps_completed) for t in found.trials], selects

    told, selects = db.run_sync(change)
    assert told == [
        (ids[0], TrialState.RUNNING, 100),
        (ids[1], TrialState.RUNNING, 0),
        (ids[2], TrialState.RUNNING, 0),
    ]
    assert len(selects) == 1
