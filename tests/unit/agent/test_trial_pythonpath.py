from __future__ import annotations

from assay.compat import SHIMS_DIR, trial_pythonpath


def test_shims_come_first_before_the_experiments_own_pythonpath() -> None:
    assert trial_pythonpath("/opt/lib:/srv/code") == f"{SHIMS_DIR}:/opt/lib:/srv/code"


def test_shims_alone_when_nothing_else_is_on_the_path() -> None:
    assert trial_pythonpath(None) == str(SHIMS_DIR)
    assert trial_pythonpath("") == str(SHIMS_DIR)


def test_shims_are_not_listed_twice() -> None:
    assert trial_pythonpath(f"{SHIMS_DIR}:/x") == f"{SHIMS_DIR}:/x"
