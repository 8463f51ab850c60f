"""What ``assay job``, ``assay cmd`` and ``assay task`` print before they talk to a master:
their help, and their refusals, with the user's text as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.cli.test_cli_refusals import assay, one_line_error


def test_brackets_in_an_error_are_printed_as_written(tmp_path: Path) -> None:
    line = one_line_error(assay(tmp_path, "job", "update-batch", "[a-z]+.priority"))
    assert "'[a-z]+.priority'" in line


def test_help_shows_brackets_as_written(tmp_path: Path) -> None:
    shown = assay(tmp_path, "job", "logs", "--help").stdout
    assert "[role/index]" in shown
    shown = assay(tmp_path, "task", "logs", "--help").stdout
    assert "[role/index]" in shown


def test_a_missing_job_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert one_line_error(assay(tmp_path, "job", "submit", str(missing))) == (
        f"error: no such file: {missing}"
    )


def test_an_empty_job_file_is_said_to_be_empty(tmp_path: Path) -> None:
    empty = tmp_path / "job.yaml"
    empty.write_text("\n")
    line = one_line_error(assay(tmp_path, "job", "submit", str(empty)))
    assert line.startswith(f"error: {empty} is empty: expected an OpenPAI job")


def test_a_json_job_file_with_a_syntax_error_says_where_in_json_terms(tmp_path: Path) -> None:
    bad = tmp_path / "job.json"
    bad.write_text('{"jobName": "x",\n "taskRoles": [}\n')
    line = one_line_error(assay(tmp_path, "job", "submit", str(bad)))
    assert line.startswith("error: invalid JSON at line 2 column 16 of ")
    assert "YAML" not in line


def test_help_shows_flags_without_a_value_type_and_json_with_a_description(
    tmp_path: Path,
) -> None:
    shown = assay(tmp_path, "job", "logs", "--help").stdout
    assert "<bool>" not in shown
    (follow,) = [line for line in shown.splitlines() if "--follow" in line]
    assert "stream until it ends" in follow
    for args in (("job", "list"), ("job", "describe"), ("task", "list")):
        (line,) = [
            line
            for line in assay(tmp_path, *args, "--help").stdout.splitlines()
            if "--json" in line
        ]
        assert "print JSON instead of text" in line


def test_a_help_paragraph_wraps_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    shown = assay(tmp_path, "up", "--help").stdout
    assert any(
        "What is up already is kept" in line and "that runs without one)." in line
        for line in shown.splitlines()
    ), shown
