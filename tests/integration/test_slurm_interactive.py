"""Notebooks and shells on a Slurm pool: JupyterLab and sshd run as Slurm jobs on the one-node
cluster the tests start (``tests/slurm``), reached through the master's proxy and tunnel at the
node's address and the port the master reserved there."""

from __future__ import annotations

import getpass
import importlib.util
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from assay.client import Client
from tests.integration.cluster import Cluster, serve, wait_for
from tests.integration.interactive import notebook_answering, shell_running
from tests.integration.test_slurm import queued_jobs, slurm_master
from tests.slurm import SlurmCluster, slurm_cluster

_NO_JUPYTERLAB = "notebooks need jupyterlab (pip install 'assay[notebook]')"
_NO_OPENSSH = (
    "shells need OpenSSH's ssh and sshd (apt-get install openssh-client openssh-server; "
    "`make system-deps`)"
)

pytestmark = pytest.mark.integration


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


@dataclass(frozen=True)
class Started:
    """What the module starts at once, so that JupyterLab and sshd start side by side: alice's
    notebook on a slot and the admin's shell on none (each None where this machine cannot run
    it). A Slurm job has a CPU even for no slot: the node's 2 CPUs hold both."""

    notebook: int | None
    shell: int | None


@pytest.fixture(scope="module")
def started(cluster: Cluster, alice: Client, tmp_path_factory: pytest.TempPathFactory) -> Started:
    from assay.context import pack_context

    notebook = None
    if importlib.util.find_spec("jupyterlab") is not None:
        notebook = alice.start_notebook("description: lab on slurm\n").id
    shell = None
    if shutil.which("ssh") and (shutil.which("sshd") or Path("/usr/sbin/sshd").exists()):
        code = tmp_path_factory.mktemp("shell-context")
        (code / "data.txt").write_text("from the context\n")
        context = pack_context(code).data
        shell = cluster.client.start_shell(context=context, overrides=["resources.slots=0"]).id
    return Started(notebook, shell)


def _held(cluster: Cluster) -> int:
    """Slots the pool's jobs hold now (the agents' listing marks only trials' slots)."""
    return sum(job.slots_acquired for job in cluster.client.jobs().jobs)


def test_a_notebook_on_slurm_answers_its_owner_through_the_proxy_and_refuses_others(
    cluster: Cluster, slurm: SlurmCluster, alice: Client, started: Started
) -> None:
    if started.notebook is None:
        pytest.skip(_NO_JUPYTERLAB)
    book = notebook_answering(alice, started.notebook)
    assert (book.slots, book.user, book.resource_pool) == (1, "alice", "default")
    url = f"{cluster.url}{book.url}api/status"
    answer = httpx.get(url, headers={"Authorization": f"Bearer {alice.http.token}"})
    assert answer.status_code == 200, answer.text
    assert "started" in answer.json()
    bob = cluster.add_user("bob")
    refused = httpx.get(url, headers={"Authorization": f"Bearer {bob.http.token}"})
    assert refused.status_code == 403
    assert "belongs to alice" in refused.json()["error"]["message"]
    # Killed, its Slurm job ends and its slot is free (the shell's job, if any, runs on).
    others = 0 if started.shell is None else 1
    assert (len(queued_jobs(slurm)), _held(cluster)) == (1 + others, 1)
    alice.kill_notebook(book.id)
    ended = wait_for(
        "the notebook to end",
        lambda: (b := alice.notebook(book.id)).state.terminal and b,
        timeout=60,
    )
    assert ended.state == "STOPPED", ended.message
    wait_for("its Slurm job to end", lambda: len(queued_jobs(slurm)) == others, timeout=30)
    wait_for("its slot to be free", lambda: _held(cluster) == 0)


def test_a_shell_on_slurm_runs_a_command_through_assay_shell_open(
    cluster: Cluster, slurm: SlurmCluster, started: Started
) -> None:
    if started.shell is None:
        pytest.skip(_NO_OPENSSH)
    shell_id = started.shell
    shell = shell_running(cluster.client, shell_id)
    # Slurm runs the job as the account that submitted it: the master's.
    assert (shell.ssh_user, shell.slots) == (getpass.getuser(), 0)
    ran = cluster.cli("shell", "open", str(shell_id), "--", "echo hi")
    assert (ran.returncode, ran.stdout) == (0, "hi\n"), ran.stderr
    ran = cluster.cli("shell", "open", str(shell_id), "--", "cat data.txt; echo $ASSAY_TASK_ID")
    assert ran.stdout == f"from the context\n{shell_id}\n", ran.stderr
    cluster.cli("shell", "kill", str(shell_id), check=True)
    wait_for("the shell to end", lambda: cluster.client.shell(shell_id).state.terminal, timeout=60)
    wait_for("Slurm's queue to empty", lambda: not queued_jobs(slurm), timeout=30)
