"""``assay experiment create --local`` offers one slot per CPU core and refuses, in one line, a
trial that asks for more slots than the local agent offers."""

from __future__ import annotations

import os

import pytest

from assay import rest
from assay.cli._local import agent_slots, slots_problem


def slots(n: int, kind: str = "cpu") -> list[rest.AgentSlot]:
    return [rest.AgentSlot(id=str(i), type=kind, allocated=False) for i in range(n)]


def test_the_local_agent_offers_one_slot_per_cpu_core() -> None:
    assert agent_slots() == (os.cpu_count() or 1)


@pytest.mark.parametrize("wanted", [0, 1, 4])
def test_a_trial_that_fits_the_slots_is_accepted(wanted: int) -> None:
    assert slots_problem(wanted, slots(4)) is None


def test_more_slots_than_cores_is_refused_in_one_line_naming_the_fix() -> None:
    problem = slots_problem(5, slots(4))
    assert problem == (
        "resources.slots_per_trial is 5, but --local offers 4 slot(s) on this machine (one per "
        "CPU core); run it locally with --config resources.slots_per_trial=4"
    )


def test_on_a_gpu_machine_the_refusal_counts_gpus() -> None:
    problem = slots_problem(3, slots(2, "cuda"))
    assert problem is not None and "offers 2 slot(s)" in problem and "(one per GPU)" in problem
    assert "\n" not in problem
