"""Notebooks and shells on a Slurm pool: JupyterLab and sshd run as Slurm jobs on the one-node
cluster the tests start (``tests/slurm``), reached through the master's proxy and tunnel at the
node's address and the port the master reserved there."""

from __future__ import annotations

import getpass
import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from assay import rest
from assay.client import Client
from assay.errors import AssayError
from tests.integration.cluster import Cluster, serve, wait_for
from tests.integration.test_slurm import queued_jobs, slurm_master
from tests.slurm import SlurmCluster, slurm_cluster

_NO_JUPYTERLAB = "notebooks need jupyterlab (pip install 'assay[notebook]')"
_NO_OPENSSH = (
    "shells need OpenSSH's ssh and sshd (apt-get install openssh-client openssh-server; "
    "`make system-deps`)"
)

pytestmark = pytest.mark.integration

START = 120.0


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


@pytest.fixture(scope="module")
def cluster(
    slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """A master whose default pool is the Slurm partition: one node of 2 CPU slots."""
    yield from serve(slurm_master(tmp_path_factory.mktemp("slurm-master"), slurm), request)


@pytest.fixture(scope="module")
def alice(cluster: Cluster) -> Client:
    return cluster.add_user("alice")


def _answering(client: Client, notebook_id: int) -> rest.Notebook:
    def answers() -> rest.Notebook | None:
        book = client.notebook(notebook_id)
        if book.state.terminal:
            lines = [e.line for e in client.task_logs(notebook_id)]
            raise AssertionError(f"notebook {notebook_id} ended: {book.message}; {lines}")
        if not book.ready:
            return None
        try:
            client.http.get(f"{book.url}api/status")
        except AssayError:
            return None
        return book

    return wait_for(f"notebook {notebook_id} to answer", answers, timeout=START)


def test_a_notebook_on_slurm_answers_its_owner_through_the_proxy_and_refuses_others(
    cluster: Cluster, slurm: SlurmCluster, alice: Client
) -> None:
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip(_NO_JUPYTERLAB)
    book = _answering(alice, alice.start_notebook("description: lab on slurm\n").id)
    assert (book.slots, book.user, book.resource_pool) == (1, "alice", "default")
    assert [j for j in queued_jobs(slurm) if j.startswith("assay-")], "it runs as a Slurm job"
    url = f"{cluster.url}{book.url}api/status"
    answer = httpx.get(url, headers={"Authorization": f"Bearer {alice.http.token}"})
    assert answer.status_code == 200, answer.text
    assert "started" in answer.json()
    bob = cluster.add_user("bob")
    refused = httpx.get(url, headers={"Authorization": f"Bearer {bob.http.token}"})
    assert refused.status_code == 403
    assert "belongs to alice" in refused.json()["error"]["message"]
    # Killed, its Slurm job ends and its slot is free.
    alice.kill_notebook(book.id)
    ended = wait_for(
        "the notebook to end",
        lambda: (b := alice.notebook(book.id)).state.terminal and b,
        timeout=60,
    )
    assert ended.state == "STOPPED", ended.message
    wait_for("Slurm's queue to empty", lambda: not queued_jobs(slurm), timeout=30)
    wait_for(
        "the slot to be free",
        lambda: not any(s.allocated for a in cluster.client.agents() for s in a.slots),
    )


def test_a_shell_on_slurm_runs_a_command_through_assay_shell_open(
    cluster: Cluster, slurm: SlurmCluster, tmp_path: Path
) -> None:
    if not (shutil.which("ssh") and (shutil.which("sshd") or Path("/usr/sbin/sshd").exists())):
        pytest.skip(_NO_OPENSSH)
    (tmp_path / "data.txt").write_text("from the context\n")
    started = cluster.cli("shell", "start", "-d", "--json", "-c", str(tmp_path), check=True)
    shell_id = int(json.loads(started.stdout)["id"])
    shell = wait_for(
        f"shell {shell_id} to run",
        lambda: (s := cluster.client.shell(shell_id)).ready and s.ssh_user and s,
        timeout=START,
    )
    # Slurm runs the job as the account that submitted it: the master's.
    assert shell.ssh_user == getpass.getuser()
    ran = cluster.cli("shell", "open", str(shell_id), "--", "echo hi")
    assert (ran.returncode, ran.stdout) == (0, "hi\n"), ran.stderr
    ran = cluster.cli("shell", "open", str(shell_id), "--", "cat data.txt; echo $ASSAY_TASK_ID")
    assert ran.stdout == f"from the context\n{shell_id}\n", ran.stderr
    cluster.cli("shell", "kill", str(shell_id), check=True)
    wait_for(
        "the shell to end", lambda: cluster.client.shell(shell_id).state.terminal, timeout=60
    )
    wait_for("Slurm's queue to empty", lambda: not queued_jobs(slurm), timeout=30)
