"""The line a trial writes when the harness knows why it cannot go on, as its agent reads it."""

from __future__ import annotations

from assay.protocol import MAX_FAILURE, failure_line, failure_reason


def test_a_failure_line_says_its_reason_on_one_line_and_is_read_back() -> None:
    line = failure_line("checkpoint_storage.bucket: s3 bucket 'b'\ndoes not exist")
    assert "\n" not in line
    assert failure_reason(line) == "checkpoint_storage.bucket: s3 bucket 'b' does not exist"
    # A distributed trial's launcher tags each rank's lines.
    assert failure_reason(f"[rank=1] {line}") == failure_reason(line)


def test_other_lines_say_no_reason_and_a_long_reason_is_cut() -> None:
    assert failure_reason("Traceback (most recent call last):") is None
    assert failure_reason(failure_line("")) is None
    assert len(failure_reason(failure_line("x" * 5000)) or "") == MAX_FAILURE
