"""A request body is taken as its schema says, no more and no less: a value of another JSON type
is refused (pydantic's lax mode took ``0`` for false and ``false`` for 0), an integer may be
written as JSON Schema allows (``3.0``), an enum as its value, a field that may be left out is
refused as null, and the bounds the schema states are the ones checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from assay import rest
from assay.errors import error_from_payload, printable
from assay.protocol import ExitedReason
from assay.rest import _common
from assay.scheduler._model import MAX_PRIORITY, MIN_PRIORITY

UUID = "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10"


def refused(model: type[rest.Request], body: dict[str, Any]) -> dict[str, str]:
    """What each refused field is told, by path."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return {".".join(str(p) for p in e["loc"]): e["msg"] for e in caught.value.errors()}


@pytest.mark.parametrize(
    ("model", "body", "path"),
    [
        (rest.UserCreate, {"username": "ann", "password": "p" * 12, "admin": 0}, "admin"),
        (rest.UserChange, {"active": "true"}, "active"),
        (rest.CheckpointReport, {"uuid": UUID, "steps_completed": False}, "steps_completed"),
        (rest.CheckpointReport, {"uuid": UUID, "steps_completed": 1, "resources": {"a": True}},
         "resources.a"),
        (rest.JobChange, {"priority": "5"}, "priority"),
        (rest.ProgressReport, {"progress": True}, "progress"),
        (rest.ExperimentFork, {"activate": 1}, "activate"),
    ],
)  # fmt: skip
def test_a_value_of_another_json_type_is_refused(
    model: type[rest.Request], body: dict[str, Any], path: str
) -> None:
    assert list(refused(model, body)) == [path]


def test_an_integer_may_be_written_as_json_schema_allows() -> None:
    report = {"group": "validation", "steps_completed": 40.0, "metrics": {"loss": 1.0}}
    batch = rest.MetricsBatch.model_validate({"reports": [report]})
    assert batch.reports[0].steps_completed == 40
    assert isinstance(batch.reports[0].steps_completed, int)
    assert batch.reports[0].metrics == {"loss": 1.0}, "what a trial reports stays as it was"
    tensorboard = rest.TensorBoardRequest.model_validate({"experiment_id": 3.0, "trial_ids": [4.0]})
    assert (tensorboard.experiment_id, tensorboard.trial_ids) == (3, [4])
    assert list(refused(rest.CompletedOperation, {"length": 2.5, "metric": 1.0})) == ["length"]


def test_an_enum_is_given_by_its_value() -> None:
    assert rest.PaiExecutionTypeChange.model_validate({"value": "STOP"}).value == "STOP"
    reason = rest.EarlyExitReport.model_validate({"reason": "errored"}).reason
    assert reason == ExitedReason.ERRORED


def test_a_field_that_may_be_left_out_is_refused_as_null_and_its_schema_has_no_null() -> None:
    left_out = "must not be null: leave it out to keep what it is"
    assert refused(rest.ExperimentResources, {"priority": None}) == {"priority": left_out}
    assert refused(rest.JobChange, {"priority": 3, "weight": None}) == {"weight": left_out}
    assert rest.ExperimentResources.model_validate({"max_slots": None}).max_slots is None
    schema = json.dumps(rest.JobChange.model_json_schema())
    assert '"null"' not in schema and '"default"' not in schema
    assert rest.JobChange.model_json_schema()["minProperties"] == 1
    assert rest.BatchChange.model_json_schema()["minProperties"] == 2  # job_id and a change


def test_priority_and_weight_bounds_are_the_schedulers_in_its_words() -> None:
    assert (_common.MIN_PRIORITY, _common.MAX_PRIORITY) == (MIN_PRIORITY, MAX_PRIORITY)
    priority = rest.ExperimentResources.model_json_schema()["properties"]["priority"]
    assert (priority["minimum"], priority["maximum"]) == (MIN_PRIORITY, MAX_PRIORITY)
    assert refused(rest.JobChange, {"priority": 0}) == {
        "priority": "must be from 1 (most urgent) to 99 (least urgent), got 0"
    }
    assert refused(rest.JobChange, {"weight": 0}) == {
        "weight": "must be a number greater than 0, e.g. 2 or 0.5, got 0.0"
    }


def test_a_size_bound_is_one_a_json_number_holds_exactly() -> None:
    assert float(rest.SIZE_MAX) == rest.SIZE_MAX
    too_big = {"uuid": UUID, "steps_completed": 1, "resources": {"a": rest.SIZE_MAX + 1}}
    assert list(refused(rest.CheckpointReport, too_big)) == ["resources.a"]


def test_an_error_quoting_a_lone_surrogate_can_still_be_sent_and_read() -> None:
    wire = error_from_payload(400, {"error": {"type": "InvalidConfig", "message": "k\udb9c"}})
    assert wire.message == "k\\udb9c"
    assert json.dumps(wire.to_json(), ensure_ascii=False).encode("utf-8")
    assert printable("café 😀") == "café 😀"
