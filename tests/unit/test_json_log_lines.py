"""The master's JSON log lines: one object a record, with its figures (``extra=``) as fields
and its traceback as one string; non-JSON values are written as text."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from assay.api._logformat import JsonLines


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "assay.master", logging.WARNING, __file__, 1, "took %.1f s", (2.5,), None
    )
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_records_figures_are_fields_of_its_line() -> None:
    line = json.loads(JsonLines().format(_record(seconds=2.5, route="/api/v1/x", where=Path("/p"))))
    assert line["message"] == "took 2.5 s"
    assert line["level"] == "warning"
    assert line["logger"] == "assay.master"
    assert (line["seconds"], line["route"], line["where"]) == (2.5, "/api/v1/x", "/p")
    assert "args" not in line and "msg" not in line


def test_a_traceback_is_one_field() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record()
        record.exc_info = sys.exc_info()
    text = JsonLines().format(record)
    assert "\n" not in text
    assert "ValueError: boom" in json.loads(text)["exception"]
