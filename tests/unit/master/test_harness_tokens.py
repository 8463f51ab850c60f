"""A trial's token is known from its allocation's start (or read from the database once) while
the allocation lives, and refused as soon as the allocation has ended (on SQLite and
PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from assay import rest
from assay.errors import Fenced, Unauthorized
from assay.master import Caller, Master, Submission
from assay.master.kernel import _callers as callers_module
from assay.master.kernel._callers import CallerCache
from assay.protocol import RelayedBatch
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run


def started(master: Master, context: bytes) -> tuple[Recorder, dict[str, Any]]:
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
            "searcher": {"name": "random", "metric": "loss", "max_trials": 2},
            "max_restarts": 0,
        }
    )
    run(master.experiments.create(ADMIN, Submission(text, context)))
    agent = Recorder()
    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": "0"}]}
    run(master.pools.join(hello, agent))
    run(master.loops.schedule_once())
    return agent, agent.starts()[0]


def counting_reads(master: Master) -> list[int]:
    """Counts the orchestrator's reads (it still does each of them)."""
    reads: list[int] = []
    original = master.core.read

    async def read(fn: Any, *, locked: bool = False) -> Any:
        reads.append(1)
        return await original(fn, locked=locked)

    master.core.read = read  # type: ignore[method-assign]
    return reads


def test_a_started_allocations_token_is_known_without_a_read(
    master: Master, context: bytes
) -> None:
    _, start = started(master, context)
    token = start["env"]["ASSAY_TOKEN"]
    reads = counting_reads(master)
    first = run(master.harness.caller(token))
    again = run(master.harness.caller(token, first.trial_id))
    assert first == again == Caller(start["allocation_id"], start["trial_id"], 1)
    assert reads == []


def test_a_token_not_kept_is_read_once_while_its_allocation_lives(
    master: Master, context: bytes
) -> None:
    _, start = started(master, context)
    token = start["env"]["ASSAY_TOKEN"]
    master.core.callers.forget(start["allocation_id"])  # not known, as after a master restart
    reads = counting_reads(master)
    first = run(master.harness.caller(token))
    again = run(master.harness.caller(token, first.trial_id))
    assert first == again == Caller(start["allocation_id"], start["trial_id"], 1)
    assert len(reads) == 1


def test_a_known_token_used_for_another_trial_is_refused(master: Master, context: bytes) -> None:
    _, start = started(master, context)
    token = start["env"]["ASSAY_TOKEN"]
    caller = run(master.harness.caller(token))
    with pytest.raises(Unauthorized, match=f"belongs to trial {caller.trial_id}, not trial 999"):
        run(master.harness.caller(token, 999))


def test_an_ended_allocations_token_is_refused_at_once(master: Master, context: bytes) -> None:
    _, start = started(master, context)
    token = start["env"]["ASSAY_TOKEN"]
    run(master.harness.caller(token))
    exited = {"type": "exited", "allocation_id": start["allocation_id"], "exit_code": 0}
    run(master.agents.on_message("a1", exited))
    assert master.core.callers.get(token) is None
    with pytest.raises(Fenced, match=r"has ended .*: nothing it reports is taken"):
        run(master.harness.caller(token))


def test_an_unknown_token_is_refused_and_not_kept(master: Master, context: bytes) -> None:
    started(master, context)
    for _ in range(2):
        with pytest.raises(Unauthorized, match="unknown allocation token"):
            run(master.harness.caller("not-a-token"))
    assert master.core.callers.get("not-a-token") is None
    assert len(master.core.callers) == 1, "the started allocation's token only"


def test_a_check_that_raced_its_own_allocations_end_is_not_kept() -> None:
    cache = CallerCache()
    caller = Caller("alloc-1", 1, 1)
    since = cache.version()
    cache.forget("alloc-1")  # it ended while its token was being read
    cache.keep("token-1", caller, since)
    assert cache.get("token-1") is None and len(cache) == 0


def test_a_check_that_raced_other_allocations_ends_is_kept_and_forgotten_at_its_own() -> None:
    """On a large cluster dozens of allocations end every second: a check is refused only for
    its own allocation's end, or it would never be kept while the master is busy."""
    cache = CallerCache()
    caller = Caller("alloc-1", 1, 1)
    since = cache.version()
    for i in range(2, 50):
        cache.forget(f"alloc-{i}")
    cache.keep("token-1", caller, since)
    assert cache.get("token-1") == caller
    cache.forget("alloc-1")
    assert cache.get("token-1") is None and len(cache) == 0


def test_a_check_older_than_the_ends_remembered_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(callers_module, "ENDS_KEPT", 3)
    cache = CallerCache()
    since = cache.version()
    cache.forget("alloc-1")  # its end is forgotten after three more
    for i in range(2, 5):
        cache.forget(f"alloc-{i}")
    cache.keep("token-1", Caller("alloc-1", 1, 1), since)
    assert cache.get("token-1") is None


def test_a_restarted_masters_relayed_backlog_reads_its_tokens_once(
    master: Master, context: bytes
) -> None:
    """Every trial's batches come at once to a restarted master (which knows no token): the
    unknown tokens of a relayed message are read in one query, not one per batch; an ended
    allocation's batch is still refused, alone."""
    _, start = started(master, context)
    token = start["env"]["ASSAY_TOKEN"]
    trial_id = start["trial_id"]
    master.core.callers = CallerCache()  # as a master started again
    reads = counting_reads(master)
    report = {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}
    batches = [
        RelayedBatch(token, trial_id, [dict(report, steps_completed=step)]) for step in range(1, 6)
    ] + [RelayedBatch("not-a-token", trial_id, [report])]
    outcomes = run(master.harness.relayed(batches))
    assert [o.status for o in outcomes] == [204] * 5 + [401]
    # One read for the message's unknown tokens, one more for the token none holds.
    assert len(reads) == 2


def test_a_relayed_messages_batches_are_each_answered_in_order_and_told_in_one_event(
    master: Master, context: bytes
) -> None:
    _, start = started(master, context)
    token, trial_id = start["env"]["ASSAY_TOKEN"], start["trial_id"]
    published: list[rest.EventBatch] = []
    publish = master.core.events.publish

    def spy(batch: rest.EventBatch) -> None:
        published.append(batch)
        publish(batch)

    master.core.events.publish = spy  # type: ignore[method-assign]
    report = {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}
    checkpoint = {"uuid": "00000000-0000-4000-8000-000000000001", "steps_completed": 1}
    batches = [
        RelayedBatch(token, trial_id, [report]),
        RelayedBatch(token, trial_id + 99, [report]),  # another trial's: refused
        RelayedBatch(token, trial_id, [dict(report, steps_completed="two")]),  # not valid
        RelayedBatch("not-a-token", trial_id, [report]),
        RelayedBatch(token, trial_id, [], checkpoint=checkpoint),
        RelayedBatch(token, trial_id, [dict(report, steps_completed=2)]),
    ]
    outcomes = run(master.harness.relayed(batches))
    assert [o.status for o in outcomes] == [204, 401, 400, 401, 204, 204]
    assert "steps_completed" in str(outcomes[2].error)
    told = [m for b in published for m in b.metrics]
    assert [[r.steps_completed for r in m.metrics] for m in told] == [[1], [2]]
    assert len([b for b in published if b.metrics]) == 1, "the message's reports in one event"
    assert told[-1].steps_completed == 2
