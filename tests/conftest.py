"""Fixtures every test can use: the databases (SQLite always, PostgreSQL when reachable)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

# Every row write outside assay.db fails, here and in every master the tests start (they
# inherit the environment): the suite is the check of the one-writer rule.
os.environ["ASSAY_GUARD_WRITERS"] = "1"

# The hook that stops the munged a Slurm test started, once the whole run has ended.
from tests.slurm.plugin import pytest_sessionfinish  # noqa: F401

# The files that take longest (seconds of one worker: a CI run's --junitxml on two cores), in
# that order, go first. `--dist loadfile --no-loadscope-reorder` (as `make test` runs it) hands
# files to the workers in collection order, so a long file collected late is the whole run's
# tail: xdist's default order, most tests first, put the long one-test files last (measured:
# two workers idle for the last four minutes). Every other file keeps its place after them.
LONGEST_FIRST = (
    "tests/benchmarks/test_benchmarks_run.py",
    "tests/integration/test_api_fuzz.py",
    "tests/integration/test_images.py",
    "tests/integration/test_slurm.py",
    "tests/integration/test_containers.py",
    "tests/benchmarks/test_scale_quick.py",
    "tests/integration/test_determined_pytorch.py",
    "tests/integration/test_pytorch_and_custom_searcher_examples.py",
    "tests/integration/test_local_mode.py",
    "tests/integration/test_jobs.py",
    "tests/integration/test_determined_keras_trial.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_searchers.py",
    "tests/integration/test_agent_losses.py",
    "tests/integration/test_distributed.py",
    "tests/integration/test_determined.py",
    "tests/integration/test_determined_deepspeed.py",
    "tests/integration/test_det_experiments.py",
    "tests/integration/test_nni_trials.py",
    "tests/integration/test_backup_restore.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent.parent
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        try:
            return rank.get(item.path.relative_to(root).as_posix(), len(rank))
        except ValueError:  # a file outside the repository
            return len(rank)

    items.sort(key=place)  # stable: each file's tests, and the other files, keep their order


@pytest.fixture(autouse=True)
def _own_config_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sign-ins stored by tests go to a directory of the test run's own, never the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("ASSAY_USER_TOKEN", raising=False)


PG_ADMIN_URL = os.environ.get(
    "ASSAY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _pg_reachable() -> str | None:
    """None if PostgreSQL answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(_libpq(PG_ADMIN_URL), connect_timeout=3):
            return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The admin URL of a reachable PostgreSQL; skips (fails under CI=true) otherwise."""
    problem = _pg_reachable()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL must be reachable under CI at {PG_ADMIN_URL}: {problem}")
        pytest.skip(f"no PostgreSQL at {PG_ADMIN_URL}: {problem}")
    return PG_ADMIN_URL


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    import psycopg

    name = f"assay_test_{secrets.token_hex(6)}"
    with psycopg.connect(_libpq(pg_server), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg_server.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        # Connections a test left open (a killed master's pool) would block the drop.
        with psycopg.connect(_libpq(pg_server), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each database test runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'assay.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url
