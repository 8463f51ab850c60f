"""Room for a whole job: refusing what a pool's agents could never hold together, and saying
why a job that could fit still waits."""

from __future__ import annotations

import math

from assay.master.queue._room import (
    AgentRoom,
    Amounts,
    Queued,
    RoleNeed,
    TrialShape,
    number,
    pool_total,
    too_big,
    why_waiting,
)

TWO_AGENTS = pool_total([AgentRoom(2, 4, 8192), AgentRoom(2, 4, 8192)])


def _role(name: str, instances: int, slots: int = 0, cpu: float = 0, mb: int = 0) -> RoleNeed:
    return RoleNeed(name, instances, Amounts(slots, cpu, mb), f"taskRoles.{name}.instances")


def test_pool_total_adds_agents_and_an_agent_without_a_limit_makes_it_unlimited() -> None:
    assert Amounts(4, 8, 16384) == TWO_AGENTS
    unlimited = pool_total([AgentRoom(1, 0, 0), AgentRoom(1, 2, 100)])
    assert unlimited.slots == 2 and math.isinf(unlimited.cpu) and math.isinf(unlimited.memory_mb)


def test_a_role_whose_instances_exceed_the_pool_in_all_is_named_with_full_numbers() -> None:
    ((path, message),) = too_big([_role("worker", 3, cpu=8)], TWO_AGENTS)
    assert path == "taskRoles.worker.instances"
    assert "task role worker needs 24 cpus in all, the pool's agents have 8" in message
    assert "3 instances of 8 each" in message
    ((_, memory),) = too_big([_role("big", 5000, mb=4096)], TWO_AGENTS)
    assert "20480000 MB of memory" in memory and "e+" not in memory


def test_roles_fitting_alone_but_not_together_name_the_biggest_role() -> None:
    roles = [_role("ps", 1, slots=1), _role("worker", 2, slots=2)]
    ((path, message),) = too_big(roles, TWO_AGENTS)
    assert path == "taskRoles.worker.instances"
    assert "the job's 2 task roles need 5 slots in all, the pool's agents have 4" in message
    assert "ps 1, worker 4" in message


def test_a_job_that_fits_in_all_is_not_refused() -> None:
    assert too_big([_role("worker", 2, slots=2, cpu=4, mb=8192)], TWO_AGENTS) == []
    assert too_big([_role("w", 10, cpu=0.8)], TWO_AGENTS) == []  # 8.000000001 is 8


AGENTS = [AgentRoom(2, 4, 8192), AgentRoom(2, 4, 8192)]


def test_why_waiting_names_the_resource_short_then_the_job_ahead() -> None:
    free = Amounts(1, 8, 16384)
    short = why_waiting(
        Queued(Amounts(slots=3)), pool="p", agents=AGENTS, total=TWO_AGENTS, free=free
    )
    assert short == "needs 3 slots; 1 of the pool's 4 are free"
    behind = why_waiting(
        Queued(Amounts(slots=1), ahead=("job 7",)),
        pool="p",
        agents=AGENTS,
        total=TWO_AGENTS,
        free=free,
    )
    assert behind == "waits behind job 7, ahead of it in the queue"
    many = why_waiting(
        Queued(Amounts(slots=1), ahead=("experiment 3", "job 7", "job 8")),
        pool="p",
        agents=AGENTS,
        total=TWO_AGENTS,
        free=free,
    )
    assert many == "waits behind 3 jobs ahead of it in the queue, experiment 3 first"
    none = why_waiting(Queued(Amounts(1)), pool="gpu", agents=[], total=Amounts(), free=Amounts())
    assert none == "no agent of pool 'gpu' is connected"
    nodes = why_waiting(
        Queued(Amounts(1)),
        pool="hpc",
        agents=[],
        total=Amounts(),
        free=Amounts(),
        pool_type="slurm",
    )
    assert nodes == "no node of Slurm pool 'hpc' has joined (`assay master logs` says why)"
    reserved = why_waiting(
        Queued(Amounts(5), reserved=True), pool="p", agents=AGENTS, total=TWO_AGENTS, free=free
    )
    assert "reserved" in reserved


def _trial_wait(shape: TrialShape, agents: list[AgentRoom], **more: object) -> str:
    total = pool_total(agents)
    return why_waiting(
        Queued(Amounts(slots=shape.slots), trial=shape, **more),  # type: ignore[arg-type]
        pool="default",
        agents=agents,
        total=total,
        free=total,
    )


def test_a_trial_bigger_than_any_placement_of_the_agents_says_the_largest_agent() -> None:
    one = _trial_wait(TrialShape(4), [AgentRoom(2)])
    assert one == "needs 4 slots a trial; the largest agent in pool 'default' has 2"
    two = _trial_wait(TrialShape(8), [AgentRoom(2), AgentRoom(4)])
    assert (
        two
        == "needs 8 slots a trial; the largest agent in pool 'default' has 4, its 2 agents 6 in all"
    )
    uneven = _trial_wait(TrialShape(4), [AgentRoom(2), AgentRoom(1), AgentRoom(1)])
    assert "spreads only over whole agents with the same number of slots" in uneven
    single = _trial_wait(TrialShape(4, single_node=True), [AgentRoom(2), AgentRoom(2)])
    assert "the largest agent in pool 'default' has 2" in single and "is_single_node" in single
    label = _trial_wait(TrialShape(1, label="gpu"), [AgentRoom(2)])
    assert (
        label
        == "its trials need an agent with label 'gpu'; no connected agent of pool 'default' has it"
    )


def test_a_trial_that_two_whole_agents_hold_is_not_called_too_big() -> None:
    spread = _trial_wait(TrialShape(4), [AgentRoom(2), AgentRoom(2)])
    assert "largest agent" not in spread


def test_max_slots_explains_a_trial_the_job_may_not_start() -> None:
    over = _trial_wait(TrialShape(2), [AgentRoom(4)], max_slots=1)
    assert over == (
        "a trial needs 2 slots but its max_slots is 1; raise it (assay experiment set max-slots)"
    )
    full = _trial_wait(TrialShape(1), [AgentRoom(4)], max_slots=2, held=2)
    assert full == "holds 2 slots, and one more trial of 1 slot would pass its max_slots of 2"
    one = _trial_wait(TrialShape(1), [AgentRoom(4)], max_slots=1, held=1)
    assert one == "holds 1 slot, and one more trial of 1 slot would pass its max_slots of 1"


def test_numbers_are_written_in_full() -> None:
    assert [number(24.0), number(0.5), number(1e7)] == ["24", "0.5", "10000000"]


def test_a_trial_that_fits_where_slots_are_free_waits_only_for_the_next_pass() -> None:
    next_pass = "the slots it needs are free; the next scheduling pass starts it"
    assert _trial_wait(TrialShape(1), [AgentRoom(2), AgentRoom(2)]) == next_pass
    assert _trial_wait(TrialShape(2), [AgentRoom(4)]) == next_pass
    # Free slots in all may be spread over agents, or on agents the trial may not use.
    spread = _trial_wait(TrialShape(2), [AgentRoom(2), AgentRoom(2)])
    assert spread.startswith("enough slots are free in all; a trial starts once 2 slots are")
    labelled = _trial_wait(TrialShape(1, label="gpu"), [AgentRoom(2, labels=frozenset({"gpu"}))])
    assert labelled.startswith("enough slots are free in all")
