"""``assay up`` on a running cluster refuses an option it could not apply without a restart,
rather than saying the cluster is up and ignoring it."""

from __future__ import annotations

from pathlib import Path

from assay.cli._up_options import config_text, digest, ignored_option

HOME = Path("/srv/assay-home")


def test_other_slots_are_refused_saying_what_runs_and_how_to_change_it() -> None:
    problem = ignored_option(HOME, {"master": "http://x", "slots": 2}, None, None, 4)
    assert problem == (
        f"the cluster in {HOME} is up with 2 slots; `assay down` first to start it with 4"
    )


def test_the_same_options_or_none_keep_the_cluster() -> None:
    record = {"slots": 2, "config": None, "db": digest("sqlite:////x.db")}
    assert ignored_option(HOME, record, None, None, None) is None
    assert ignored_option(HOME, record, None, "sqlite:////x.db", 2) is None


def test_another_database_is_refused_without_showing_either_url() -> None:
    record = {"slots": 2, "config": None, "db": None}
    problem = ignored_option(HOME, record, None, "postgresql://u:secret@h/db", None)
    assert problem is not None and "secret" not in problem
    assert "up with the default database" in problem and "`assay down` first" in problem


def test_another_config_is_refused_naming_both(tmp_path: Path) -> None:
    old, new = tmp_path / "a.yaml", tmp_path / "b.yaml"
    record = {"slots": 2, "config": config_text(old), "db": None}
    problem = ignored_option(HOME, record, new, None, None)
    assert problem == (
        f"the cluster in {HOME} is up with the config {old}; "
        f"`assay down` first to start it with {new}"
    )
    assert ignored_option(HOME, record, old, None, None) is None


def test_a_record_of_an_older_up_is_not_compared() -> None:
    assert ignored_option(HOME, {"master": "http://x"}, Path("c.yaml"), "sqlite://", 4) is None
