"""The experiment and trial lists the web UI pages through, sorted, filtered and counted on the
server, on SQLite and PostgreSQL; and what a transaction tells live viewers it changed."""

from __future__ import annotations

from assay.db import Database, Session, changes, contexts, experiments, jobs, metrics, trials
from assay.protocol import TRAINING, VALIDATION, ExperimentState, MetricReport, TrialState


def add_experiment(
    session: Session, name: str, *, owner: str = "admin", labels: list[str], created: float
) -> int:
    ctx = contexts.stored(session, sha256="ab" * 32, size=3, files=1, data=b"tar", now=1.0)
    job_id = f"job-{name}"
    jobs.create(
        session, job_id=job_id, type="EXPERIMENT", name=name, pool="default", priority=42,
        weight=1.0, max_slots=None, submitted_at=1.0, owner=owner,
    )  # fmt: skip
    return experiments.create(
        session, name=name, description="", state=ExperimentState.ACTIVE,
        config={"labels": labels}, original_config="", context_id=ctx.id, job_id=job_id,
        seed=1, owner=owner, created_at=created,
    ).id  # fmt: skip


def add_trial(session: Session, exp_id: int, n: int, score: float | None, steps: int) -> int:
    row = trials.create(
        session, experiment_id=exp_id, request_id=f"r{n}", hparams={"n": n}, seed=n,
        state=TrialState.RUNNING, source_checkpoint=None, created_at=1.0,
    )  # fmt: skip
    row.steps_completed = steps
    if score is not None:
        trials.record_reported(session, row.id, steps, (-score, score))
    return row.id


def test_trials_sort_by_best_score_with_ties_by_id_and_unvalidated_last_either_way(
    db: Database,
) -> None:
    def fill(session: Session) -> list[int]:
        exp = add_experiment(session, "a", labels=[], created=1.0)
        scores = [0.5, None, 0.1, 0.5, None, 0.3]
        return [add_trial(session, exp, n, s, steps=10 - n) for n, s in enumerate(scores)]

    ids = db.run_sync(fill)
    exp_id = db.run_sync(lambda s: trials.require(s, ids[0]).experiment_id)

    def page(**kw: object) -> tuple[list[int], int]:
        rows, total = db.run_sync(lambda s: trials.page_of(s, exp_id, **kw))  # type: ignore[arg-type]
        return [ids.index(r.id) for r in rows], total

    assert page(sort="best") == ([2, 5, 0, 3, 1, 4], 6)
    assert page(sort="best", descending=True) == ([3, 0, 5, 2, 4, 1], 6)
    assert page(sort="best", limit=2, offset=2) == ([0, 3], 6)
    assert page(sort="steps", limit=2) == ([5, 4], 6)
    assert page(sort="id", descending=True, limit=1) == ([5], 6)
    assert page(states=["QUEUED"]) == ([], 0)


def test_experiments_filter_by_name_label_owner_and_sort_by_best_and_end(db: Database) -> None:
    def fill(session: Session) -> dict[str, int]:
        made = {}
        for n, (name, owner, labels) in enumerate(
            [("alpha_1", "ann", ["x", "y"]), ("beta%", "bob", ["y"]), ("gamma", "ann", [])]
        ):
            made[name] = add_experiment(session, name, owner=owner, labels=labels, created=n)
        add_trial(session, made["alpha_1"], 0, 0.7, 1)
        add_trial(session, made["gamma"], 1, 0.2, 1)
        add_trial(session, made["gamma"], 2, 0.9, 1)
        experiments.require(session, made["beta%"]).ended_at = 50.0
        return made

    made = db.run_sync(fill)
    by_id = {v: k for k, v in made.items()}

    def names(**kw: object) -> tuple[list[str], int]:
        rows, total = db.run_sync(lambda s: experiments.page(s, **kw))  # type: ignore[arg-type]
        return [by_id[r.id] for r in rows], total

    assert names() == (["gamma", "beta%", "alpha_1"], 3)
    assert names(sort="best", descending=False) == (["gamma", "alpha_1", "beta%"], 3)
    assert names(sort="best") == (["alpha_1", "gamma", "beta%"], 3)
    assert names(sort="end", descending=False)[0][0] == "beta%"
    assert names(sort="name", descending=False, limit=2, offset=1) == (["beta%", "gamma"], 3)
    assert names(sort="user", descending=False)[0][-1] == "beta%"
    assert names(name="A_") == (["alpha_1"], 1)  # "_" and "%" are literal
    assert names(name="%") == (["beta%"], 1)
    assert names(label="y", sort="start", descending=False) == (["alpha_1", "beta%"], 2)
    assert names(label="z") == ([], 0)
    assert names(owner="ann", states=["ACTIVE"]) == (["gamma", "alpha_1"], 2)


def test_experiments_sort_by_progress_trial_count_and_duration_with_unstarted_last(
    db: Database,
) -> None:
    def fill(session: Session) -> dict[str, int]:
        made = {name: add_experiment(session, name, labels=[], created=0) for name in "abcd"}
        for name, progress, started, ended in [
            ("a", 0.5, 10.0, 40.0),  # ran 30 s
            ("b", 1.0, 10.0, 20.0),  # ran 10 s
            ("c", 0.1, 90.0, None),  # running: 10 s by now (100)
            ("d", 0.0, None, None),  # never ran
        ]:
            exp = experiments.require(session, made[name])
            exp.progress, exp.started_at, exp.ended_at = progress, started, ended
        for n in range(3):
            add_trial(session, made["c"], n, None, 0)
        add_trial(session, made["a"], 3, None, 0)
        return made

    made = db.run_sync(fill)
    by_id = {v: k for k, v in made.items()}

    def order(**kw: object) -> str:
        rows, _ = db.run_sync(lambda s: experiments.page(s, now=100.0, **kw))  # type: ignore[arg-type]
        return "".join(by_id[r.id] for r in rows)

    assert order(sort="progress") == "bacd"
    assert order(sort="progress", descending=False) == "dcab"
    assert order(sort="trials") == "cadb"  # ties (none) by id, descending
    assert order(sort="duration") == "acbd"  # b and c ran 10 s each: the higher id first
    assert order(sort="duration", descending=False) == "bcad"


def test_a_tracked_transaction_names_the_experiments_and_trials_it_changed(
    db: Database,
) -> None:
    def fill(session: Session) -> tuple[int, int, int]:
        exp = add_experiment(session, "a", labels=[], created=1.0)
        return exp, add_trial(session, exp, 0, None, 0), add_trial(session, exp, 1, None, 0)

    exp_id, first, second = db.run_sync(fill)

    def change(session: Session) -> changes.Changed:
        changes.track(session)
        trials.require(session, first).state = TrialState.COMPLETED
        trials.require(session, second).seed = 99  # a column no viewer shows
        experiments.require(session, exp_id).searcher_seq += 1
        return changes.changed(session)

    found = db.run_sync(change)
    assert [t.id for t in found.trials] == [first]
    assert found.experiments == [] and found.deleted_experiments == []

    def untracked(session: Session) -> changes.Changed:
        trials.require(session, first).state = TrialState.RUNNING
        return changes.changed(session)

    assert db.run_sync(untracked).trials == []


def test_a_trials_latest_report_of_each_group_is_its_highest_step_of_its_latest_run(
    db: Database,
) -> None:
    def fill(session: Session) -> tuple[int, int]:
        exp = add_experiment(session, "a", labels=[], created=1.0)
        first, second = add_trial(session, exp, 0, None, 0), add_trial(session, exp, 1, None, 0)
        for run, steps in ((1, 5), (1, 9), (2, 5), (2, 7)):
            reports = [MetricReport(group=TRAINING, steps_completed=steps, metrics={"r": run})]
            metrics.insert(session, first, run, reports, now=1.0)
        metrics.archive_after(session, first, 7, before_run=2)  # run 1's step 9 was redone
        valid = [MetricReport(group=VALIDATION, steps_completed=3, metrics={"loss": 0.5})]
        metrics.insert(session, second, 1, valid, now=1.0)
        return first, second

    first, second = db.run_sync(fill)
    shown = db.run_sync(
        lambda s: {
            t: {g: (m.run, m.steps_completed) for g, m in groups.items()}
            for t, groups in metrics.latest(s, [first, second]).items()
        }
    )
    assert shown == {first: {TRAINING: (2, 7)}, second: {VALIDATION: (1, 3)}}
