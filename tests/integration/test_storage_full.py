"""A trial whose checkpoint storage is full fails saying so: the trial's and the experiment's
message name the storage's directory, "No space left on device" and what to do, not merely
"exit code 1". The storage is a real full file system: a 1 MiB tmpfs, which needs root to
mount (skipped where mounting is not permitted). tests/unit/core/test_checkpoint_storage_
unwritable.py shows the same failure line from the kernel's ENOSPC of /dev/full, anywhere."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A file system of 1 MiB, mounted for this test and unmounted after it."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a 1 MiB tmpfs as a full checkpoint storage needs root")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip() or made.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=False)


def test_a_full_checkpoint_storage_is_named_in_the_trials_and_experiments_message(
    tmp_path: Path, small_disk: Path
) -> None:
    settings = tmp_path / "master.yaml"
    settings.write_text(
        yaml.safe_dump({"checkpoint_storage": {"type": "shared_fs", "host_path": str(small_disk)}})
    )
    cluster = Cluster(tmp_path / "home", master_config=settings)
    cluster.start_master()
    try:
        cluster.start_agent("a1", slots=1)
        config = yaml.safe_dump(
            {
                "name": "full disk",
                "entrypoint": "python3 train.py",
                "hyperparameters": {"checkpoint_bytes": 4 * 1024 * 1024},
                "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
                "max_restarts": 0,
            }
        )
        exp_id = cluster.submit(config, context=CONTEXTS / "big_checkpoint")
        exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
        (trial,) = cluster.client.trials(exp_id)
        assert exp.state == "ERROR" and trial.state == "ERROR", (exp.message, trial.message)
        said = (
            f"checkpoint storage {small_disk}: No space left on device; free space there, or "
            "set checkpoint_storage to a storage with room"
        )
        assert said in trial.message, trial.message
        assert trial.message.startswith("failed 1 time (max_restarts: 0); last: exit code 1 (")
        assert said in exp.message, exp.message
        shown = cluster.cli("e", "describe", str(exp_id), check=True).stdout
        assert "No space left on device" in shown
    finally:
        cluster.stop()
