"""A metric report may mark a validation as the trial's final result (NNI's
``report_final_result``), which an NNI experiment ranks its trials by; the mark survives the wire
both ways and is left off an ordinary report."""

from __future__ import annotations

import pytest

from assay import rest
from assay.errors import InvalidRequest
from assay.protocol import VALIDATION, MetricReport


def test_a_final_result_keeps_its_mark_across_the_wire() -> None:
    final = MetricReport(VALIDATION, 3, {"default": 0.9}, 1.0, final=True)
    assert final.to_dict()["final"] is True
    assert MetricReport.from_dict(final.to_dict(), "reports[0]") == final
    body = rest.MetricReport.model_validate(final.to_dict())
    assert body.to_protocol() == final


def test_an_ordinary_report_says_nothing_of_final() -> None:
    plain = MetricReport(VALIDATION, 1, {"default": 0.5}, 1.0)
    assert "final" not in plain.to_dict()
    assert MetricReport.from_dict(plain.to_dict(), "reports[0]").final is False
    assert rest.MetricReport.model_validate(plain.to_dict()).to_protocol().final is False


def test_a_final_mark_that_is_not_a_boolean_is_refused_naming_it() -> None:
    raw = {"group": VALIDATION, "steps_completed": 1, "metrics": {}, "final": "yes"}
    with pytest.raises(InvalidRequest, match=r"reports\[0\]\.final"):
        MetricReport.from_dict(raw, "reports[0]")
