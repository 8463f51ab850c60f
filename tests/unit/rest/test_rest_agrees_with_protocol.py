"""The harness's messages travel over REST, so each has two spellings: a standard-library
dataclass in ``assay.protocol`` (what trial processes build, without pydantic) and a pydantic
model in ``assay.rest`` (what the API validates and documents). These tests make them one
contract: the same fields, and whatever the harness sends the API reads back unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assay import protocol, rest

PAIRS: list[tuple[Any, Any, Any]] = [
    (
        protocol.MetricReport,
        rest.MetricReport,
        protocol.MetricReport("validation", 12, {"loss": 0.25, "acc": 0.9}, 1700000000.5),
    ),
    (
        protocol.CheckpointReport,
        rest.CheckpointReport,
        protocol.CheckpointReport(
            "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10", 40, {"framework": "torch"}, {"model.pt": 1234}
        ),
    ),
    (protocol.OperationAnswer, rest.SearcherOperation, protocol.OperationAnswer(300, False)),
    (protocol.CompletedOperation, rest.CompletedOperation, protocol.CompletedOperation(300, 0.5)),
    (protocol.ProgressReport, rest.ProgressReport, protocol.ProgressReport(0.75)),
    (protocol.EarlyExitReport, rest.EarlyExitReport, protocol.EarlyExitReport("invalid_hp")),
    (protocol.PreemptionAnswer, rest.PreemptionSignal, protocol.PreemptionAnswer(True)),
]


@pytest.mark.parametrize(
    ("shape", "model", "example"), PAIRS, ids=lambda v: getattr(v, "__name__", "")
)
def test_protocol_shape_and_rest_model_name_the_same_fields(
    shape: Any, model: Any, example: Any
) -> None:
    assert {f.name for f in dataclasses.fields(shape)} == set(model.model_fields)


@pytest.mark.parametrize(
    ("shape", "model", "example"), PAIRS, ids=lambda v: getattr(v, "__name__", "")
)
def test_what_the_harness_sends_the_api_reads_back_unchanged(
    shape: Any, model: Any, example: Any
) -> None:
    sent = example.to_dict()
    read = model.model_validate(sent).model_dump(mode="json")
    assert {key: read[key] for key in sent} == sent
    assert all(read[key] == model.model_fields[key].default for key in read.keys() - sent)
    if hasattr(shape, "from_dict"):
        assert shape.from_dict(read, "body") == example
