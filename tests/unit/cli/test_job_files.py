"""Job and command files the CLI refuses before asking the master, naming the file."""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli.test_cli_refusals import assay, one_line_error


def test_a_job_or_command_file_that_is_not_yaml_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("protocolVersion: 2\nname: x\ntaskRoles:\n  a: [1,\n")
    # No master is asked: nothing answers at the address.
    for args in (["job", "submit", str(bad)], ["cmd", "run", "--config-file", str(bad)]):
        line = one_line_error(assay(tmp_path, *args))
        assert f"invalid YAML in {bad} at line 5, column 1" in line


def test_update_batch_says_what_a_weight_must_be(tmp_path: Path) -> None:
    line = one_line_error(assay(tmp_path, "job", "update-batch", "7.weight=heavy"))
    assert "weight must be a number greater than 0, e.g. 2 or 0.5, got 'heavy'" in line
