"""Every form of job id a user types reads as the job it names."""

from __future__ import annotations

import pytest

from assay.cli._jobrun import JobRef, read_job_ref


@pytest.mark.parametrize(
    ("typed", "ref"),
    [
        ("7", JobRef(task_id=7)),
        ("job-7", JobRef(task_id=7)),
        ("task-7", JobRef(task_id=7)),
        (" 7 ", JobRef(task_id=7)),
        ("exp-3", JobRef(experiment_id=3)),
        ("experiment-3", JobRef(experiment_id=3)),
        ("alice~mnist_v2", JobRef(user_and_name=("alice", "mnist_v2"))),
        ("3fa2b1c0", JobRef(queue_id="3fa2b1c0")),
        # Eight digits: a queue id first, else a number.
        ("12345678", JobRef(queue_id="12345678", task_id=12345678)),
    ],
)
def test_each_form_of_job_id_names_its_job(typed: str, ref: JobRef) -> None:
    assert read_job_ref(typed) == ref


@pytest.mark.parametrize("typed", ["", "job-", "exp-x", "~mnist", "alice~", "a~b~c", "trial-3"])
def test_a_malformed_job_id_is_refused_saying_the_forms(typed: str) -> None:
    with pytest.raises(ValueError, match="is not a job id") as err:
        read_job_ref(typed)
    assert "\n" not in str(err.value)
