"""``assay up`` after ``assay down`` brings the cluster back as the last ``up`` started it: on
its port, with its database, master config and slots (``make run PORT=19501``, ``assay down``,
``assay up`` came back on 8080 with another database); the CLI's default master points there
meanwhile; options given anew win, and ``--defaults`` forgets the kept ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.cluster import CONTEXTS, free_port
from tests.integration.test_up_signs_in import private_assay

pytestmark = pytest.mark.integration

CONFIG = """\
name: kept
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 1}}
"""


def test_up_after_down_comes_back_on_the_same_port_database_config_and_slots(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    assay = private_assay(tmp_path)
    master_yaml = tmp_path / "master.yaml"
    master_yaml.write_text("limits: {max_grid_points: 123}\n")
    db = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(CONFIG)

    def experiments() -> list[object]:
        listed = assay("experiment", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        found: list[object] = json.loads(listed.stdout)["experiments"]
        return found

    try:
        first = assay(
            "up", "--port", str(port), "--slots", "1", "--config", str(master_yaml), "--db", db
        )
        assert first.returncode == 0, first.stderr
        created = assay("e", "create", "--paused", str(experiment), str(CONTEXTS / "counter"))
        assert created.returncode == 0, created.stderr
        assert assay("down").returncode == 0

        # Down, the default master is still that cluster's address.
        away = assay("experiment", "list")
        assert away.returncode == 1
        (line,) = away.stderr.strip().splitlines()
        assert f"127.0.0.1:{port}" in line and ":8080" not in line, line

        again = assay("up")
        assert again.returncode == 0, again.stderr
        assert (
            f"as the last `assay up`: --port {port} --slots 1 --config {master_yaml} --db (kept) "
            "(`assay up --defaults` starts without them)\n"
        ) in again.stdout, again.stdout
        assert f"cluster up: master {url}, 1 agent(s), 1 slot(s)" in again.stdout, again.stdout
        assert len(experiments()) == 1  # the same database
        shown = assay("master", "config", "--json")
        assert json.loads(shown.stdout)["limits"]["max_grid_points"] == 123, shown.stdout
        assert (tmp_path / "home" / "up-options.json").stat().st_mode & 0o077 == 0
        assert assay("down").returncode == 0

        # An option given anew wins; --defaults forgets the rest (the default database).
        other = free_port()
        fresh = assay("up", "--defaults", "--port", str(other), "--slots", "1")
        assert fresh.returncode == 0, fresh.stderr
        assert "as the last" not in fresh.stdout, fresh.stdout
        assert f"cluster up: master http://127.0.0.1:{other}," in fresh.stdout, fresh.stdout
        assert experiments() == []
    finally:
        assay("down")
