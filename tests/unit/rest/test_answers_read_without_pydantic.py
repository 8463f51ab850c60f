"""The answers a client reads without pydantic (``rest.Answer``): read from JSON as a model reads
it, written back as the master wrote it, and taken by pydantic on the master's side."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest
from pydantic import TypeAdapter

from assay import rest
from assay.errors import AssayError


def summary(**fields: Any) -> dict[str, Any]:
    return {
        "id": 3,
        "name": "e",
        "description": "",
        "state": "ACTIVE",
        "archived": False,
        "progress": 0,
        "owner": "admin",
        "job_id": "j",
        "message": "",
        "created_at": 1700000000,
        "started_at": None,
        "ended_at": None,
        "seed": 7,
        "searcher": {"name": "single", "metric": "loss", "smaller_is_better": True},
        "resource_pool": "default",
        "trials": {"RUNNING": 1, "COMPLETED": 2},
        "best_trial": {
            "id": 9,
            "best_validation": 0.5,
            "latest_checkpoint": None,
            "hparams": {"lr": 0.1, "layers": {"n": 2}},
        },
        **fields,
    }


def answers() -> list[type[rest.Answer]]:
    for name in rest.__all__:  # every module of the package, imported
        getattr(rest, name)
    found: list[type[rest.Answer]] = []
    pending = [rest.Answer]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


def test_an_answer_is_read_with_enums_numbers_and_nested_answers_as_a_model_reads_it() -> None:
    page = rest.read_answer(
        rest.ExperimentList,
        {"experiments": [summary()], "pagination": {"total": 1, "limit": 100, "offset": 0}},
    )
    (exp,) = page.experiments
    assert exp.state is rest.ExperimentState.ACTIVE and not exp.state.terminal
    assert exp.trials == {rest.TrialState.RUNNING: 1, rest.TrialState.COMPLETED: 2}
    assert all(type(k) is rest.TrialState for k in exp.trials)
    # JSON writes a whole float as an integer: read as the float it is.
    assert type(exp.progress) is float and type(exp.created_at) is float
    assert exp.best_trial is not None and exp.best_trial.hparams["layers"] == {"n": 2}
    assert exp.source is rest.ConfigSource.ASSAY and exp.labels == []
    assert page.pagination.total == 1


def test_what_is_read_is_what_pydantic_reads_from_the_same_answer() -> None:
    raw = {**summary(), "config": {"a": 1}, "original_config": "a: 1\n", "waiting": "why"}
    mine = rest.read_answer(rest.Experiment, raw)
    theirs = TypeAdapter(rest.Experiment).validate_python(raw)
    assert mine == theirs


def test_fields_a_newer_master_added_are_left_out() -> None:
    exp = rest.read_answer(rest.ExperimentSummary, summary(added_later={"x": 1}))
    assert not hasattr(exp, "added_later")
    assert "added_later" not in rest.to_json(exp)


def test_an_answer_that_does_not_fit_is_one_error_with_each_problem_noted() -> None:
    raw = summary(state="FINISHED", seed="7")
    del raw["owner"]
    with pytest.raises(AssayError) as caught:
        rest.read_answer(rest.ExperimentList, {"experiments": [raw], "pagination": None})
    assert caught.value.message == (
        "an answer of the master does not fit this client's ExperimentList (4 problem(s)); "
        "is the master a different version of assay? (--debug shows them)"
    )
    assert caught.value.__notes__ == [
        "experiments.0.state: 'FINISHED' is not a ExperimentState",
        "experiments.0.owner: missing",
        "experiments.0.seed: expected int, got '7'",
        "pagination: expected an object, got None",
    ]


def test_an_answer_cannot_be_changed_but_can_be_copied_with_changes() -> None:
    exp = rest.read_answer(rest.ExperimentSummary, summary())
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.name = "other"  # type: ignore[misc]
    renamed = exp.model_copy(update={"name": "other"})
    assert (renamed.name, exp.name) == ("other", "e")


def test_an_answer_is_written_back_as_the_master_wrote_it() -> None:
    raw = summary(source="nni-v2", labels=["a"])
    exp = rest.read_answer(rest.ExperimentSummary, raw)
    assert rest.to_json(exp) == {**raw, "progress": 0.0, "created_at": 1700000000.0}
    assert rest.to_json(exp) == TypeAdapter(rest.ExperimentSummary).dump_python(exp, mode="json")
    assert rest.to_json([float("nan"), {rest.TrialState.ERROR: 1}]) == [None, {"ERROR": 1}]


@pytest.mark.parametrize("shape", answers(), ids=lambda s: s.__name__)
def test_every_answer_is_readable_here_and_schema_checked_by_pydantic(
    shape: type[rest.Answer],
) -> None:
    schema = TypeAdapter(shape).json_schema()
    assert schema["title"] == shape.__name__
    # Every field's type has a reader: a field of a type it cannot read fails here.
    with pytest.raises(AssayError, match=f"does not fit this client's {shape.__name__}"):
        rest.read_answer(shape, [])


def test_reading_answers_loads_no_pydantic() -> None:
    import subprocess

    code = (
        "import sys; from assay import rest; "
        "rest.read_answer(rest.ExperimentStateAnswer, {'id': 1, 'state': 'ACTIVE'}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
