"""The wire shapes: what they accept, what they refuse, and that both ends agree on errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from assay import errors, rest
from assay.errors import AssayError, ErrorDetail, InvalidConfig, error_from_payload


def problems(model: type[rest.Request], body: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return [".".join(str(p) for p in e["loc"]) for e in caught.value.errors()]


def test_an_error_answer_is_rebuilt_by_the_client_as_the_error_the_master_raised() -> None:
    raised = InvalidConfig("2 problems", [ErrorDetail("searcher.metric", "required")])
    wire = raised.to_json()
    assert rest.ErrorResponse.model_validate(wire).model_dump(mode="json") == wire, (
        "the documented error shape is the one errors write"
    )
    rebuilt = error_from_payload(400, wire)
    assert isinstance(rebuilt, InvalidConfig)
    assert rebuilt.details == raised.details


def test_every_error_the_master_can_answer_with_is_rebuilt_as_its_own_class() -> None:
    # A class missing from the client's table comes back as a bare AssayError, and callers
    # that wait on one (a shell's sshd not listening yet: Unavailable) would stop instead.
    classes = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, AssayError) and cls is not AssayError
    ]
    assert errors.Unavailable in classes
    for cls in classes:
        rebuilt = error_from_payload(cls.status, cls("what went wrong").to_json())
        assert type(rebuilt) is cls, cls.type
        assert rebuilt.status == cls.status


def test_checkpoint_metadata_must_be_an_object() -> None:
    base = {"uuid": "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10", "steps_completed": 1}
    assert problems(rest.CheckpointReport, {**base, "metadata": [1, 2]}) == ["metadata"]
    assert problems(rest.CheckpointReport, {**base, "metadata": "x"}) == ["metadata"]
    assert rest.CheckpointReport.model_validate({**base, "metadata": None}).metadata is None


def test_step_counts_the_database_cannot_hold_are_refused() -> None:
    base = {"uuid": "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10", "steps_completed": rest.INT_MAX}
    rest.CheckpointReport.model_validate(base)
    assert problems(rest.CheckpointReport, {**base, "steps_completed": 2**63}) == [
        "steps_completed"
    ]
    report = {"group": "training", "steps_completed": 2**31, "metrics": {}}
    assert problems(rest.MetricsBatch, {"reports": [report]}) == ["reports.0.steps_completed"]


def test_checkpoint_files_adding_up_past_the_size_limit_are_refused() -> None:
    half = rest.SIZE_MAX // 2 + 1
    body = {
        "uuid": "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10",
        "steps_completed": 1,
        "resources": {"a": half, "b": half},
    }
    with pytest.raises(ValidationError, match="resources: the sizes add up to"):
        rest.CheckpointReport.model_validate(body)


def test_requests_refuse_unknown_fields_and_non_finite_numbers() -> None:
    assert problems(rest.ProgressReport, {"progress": 0.5, "extra": 1}) == ["extra"]
    assert problems(rest.CompletedOperation, {"length": 1, "metric": float("nan")}) == ["metric"]
    assert problems(rest.JobChange, {"weight": float("inf")}) == ["weight"]


def test_resources_read_answers_of_a_newer_master_and_cannot_be_changed() -> None:
    info = rest.MasterInfo.model_validate(
        {
            "version": "9.9",
            "cluster_id": "c",
            "started_at": 1.0,
            "database": "sqlite",
            "added_later": True,
        }
    )
    assert info.version == "9.9"
    with pytest.raises(ValidationError):
        info.version = "1"  # type: ignore[misc]


def test_states_are_the_enums_and_compare_to_their_names() -> None:
    answer = rest.read_answer(rest.ExperimentStateAnswer, {"id": 1, "state": "COMPLETED"})
    assert answer.state is rest.ExperimentState.COMPLETED
    assert answer.state.terminal
    assert answer.state == "COMPLETED"
    assert problems(rest.JobBatch, {"updates": []}) == ["updates"]
    with pytest.raises(AssayError, match="does not fit this client's ExperimentStateAnswer"):
        rest.read_answer(rest.ExperimentStateAnswer, {"id": 1, "state": "FINISHED"})
