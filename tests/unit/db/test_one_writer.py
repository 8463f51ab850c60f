"""Only ``assay.db`` writes rows: with the guard on (the suite turns it on for itself and every
master it starts), a column set or a row built by any other part of assay fails, naming who wrote
what; ``db``'s own functions write as usual."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from assay.db import Job
from assay.db._writers import WriteOutsideDb, guard_wanted


def _function_of(module: str, source: str) -> Callable[..., Any]:
    """``source``'s ``write`` as if it were defined in ``module``."""
    namespace: dict[str, Any] = {"__name__": module, "Job": Job}
    exec(compile(source, f"<{module}>", "exec"), namespace)
    return namespace["write"]  # type: ignore[no-any-return]


def _job() -> Job:
    return Job(id="j1", type="EXPERIMENT", name="n", pool="default", priority=42, weight=1.0)


def test_the_suite_runs_with_the_guard_on() -> None:
    assert guard_wanted()


def test_a_column_set_outside_db_fails_naming_the_module_and_the_column() -> None:
    write = _function_of("assay.master.queue._somewhere", "def write(job):\n    job.done = True\n")
    with pytest.raises(WriteOutsideDb, match=r"Job\.done was written by assay\.master\.queue"):
        write(_job())


def test_a_row_built_outside_db_fails() -> None:
    write = _function_of("assay.api._somewhere", "def write():\n    return Job(id='x')\n")
    with pytest.raises(WriteOutsideDb, match=r"a new Job was written by assay\.api\._somewhere"):
        write()


def test_db_functions_write_as_usual() -> None:
    write = _function_of("assay.db.jobs_like", "def write(job):\n    job.done = True\n")
    job = _job()
    write(job)
    assert job.done is True
