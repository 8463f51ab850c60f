"""The shell completes ids from the master: experiments, trials, checkpoints' uuids, tasks; and
when no master answers it offers nothing, quietly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.integration.cluster import ROOT, Cluster, free_port

pytestmark = pytest.mark.integration

CONFIG = """\
name: completed
entrypoint: python3 train.py
hyperparameters: {step_seconds: 0.01, checkpoint_every: 5}
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""


def completions(env: dict[str, str], line: str) -> subprocess.CompletedProcess[str]:
    """What bash's completion gets for the command line ``line`` (its last word being typed),
    as the script `assay --install-completion` installs asks for it."""
    words = line.split(" ")
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()"],
        env={
            **env,
            "_ASSAY_COMPLETE": "complete_bash",
            "COMP_WORDS": line,
            "COMP_CWORD": str(len(words) - 1),
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_ids_are_completed_from_the_master(cluster: Cluster) -> None:
    exp = cluster.submit(CONFIG)
    cluster.wait_state(exp, "COMPLETED")
    (trial,) = cluster.client.trials(exp)
    uuids = {c.uuid for c in cluster.client.experiment_checkpoints(exp)}
    for line, expected in (
        ("assay e describe ", {str(exp)}),
        ("assay experiment list-trials ", {str(exp)}),
        ("assay t logs ", {str(trial.id)}),
        ("assay checkpoint describe ", uuids),
    ):
        done = completions(cluster.env, line)
        assert done.returncode == 0 and done.stderr == "", done
        assert set(done.stdout.split()) == expected, (line, done.stdout)
    # What was typed so far narrows them.
    some = sorted(uuids)[0]
    done = completions(cluster.env, f"assay c describe {some[:6]}")
    assert some in done.stdout.split()
    assert completions(cluster.env, "assay e describe 9").stdout.split() == []


def test_with_no_master_answering_nothing_is_offered_and_nothing_said(cluster: Cluster) -> None:
    env = {**cluster.env, "ASSAY_MASTER": f"http://127.0.0.1:{free_port()}"}
    done = completions(env, "assay e describe ")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", "")
