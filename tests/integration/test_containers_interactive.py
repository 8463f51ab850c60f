"""Notebooks and shells in containers: an agent given podman runs a notebook or shell whose
config names an image inside a container of it. The test image (``tests.containers``) has a
``python3`` but no JupyterLab or sshd: a notebook in it fails with a line naming what is missing.
A shell runs in an image made from it with OpenSSH's server added."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
import yaml

from assay import rest
from assay.client import Client
from tests.containers import containers_of, ensure_sshd_image, ensure_test_image
from tests.integration.cluster import Cluster, serve, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def image() -> str:
    return ensure_test_image()


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, image: str
) -> Iterator[Cluster]:
    from tests.containers import CONTAINERS_CONF

    c = Cluster(tmp_path_factory.mktemp("containers-interactive") / "home")
    c.env["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
    c.start_master()
    c.start_agent("agent-1", slots=1, extra=("--container-runtime", "podman"))
    yield from serve(c, request)


def _config(image: str, **extra: object) -> str:
    return yaml.safe_dump({"environment": {"image": image}, **extra})


def _ended(client: Client, task_id: int, timeout: float = 120) -> rest.Task:
    return wait_for(
        f"task {task_id} to end",
        lambda: (t := client.task(task_id)).ended_at is not None and t,
        timeout=timeout,
    )


def _jobs(cluster: Cluster) -> list[rest.Job]:
    return cluster.client.jobs().jobs


def _all_free(cluster: Cluster) -> None:
    # The job queue, not the agents' listing: that marks only trials' slots.
    wait_for("the slot to be free", lambda: not any(j.slots_acquired for j in _jobs(cluster)))
    wait_for("the container to go", lambda: not containers_of("agent-1", cluster.home))


def test_a_notebook_in_an_image_without_jupyterlab_fails_with_one_line_naming_what_is_missing(
    cluster: Cluster, image: str
) -> None:
    says = "jupyterlab is not installed in the Python of agent agent-1 (or in its image)"
    book = cluster.client.start_notebook(_config(image, description="no lab here"))
    assert book.slots == 1
    ended = _ended(cluster.client, book.id)
    lines = [e.line for e in cluster.client.task_logs(book.id)]
    assert ended.state == "FAILED", (ended.message, lines)
    said = [line for line in lines if line.startswith("assay: ")]
    assert len(said) == 1 and says in said[0], lines
    _all_free(cluster)


@pytest.fixture(scope="module")
def shell_image() -> str:
    return ensure_sshd_image()


def test_a_shell_in_a_container_runs_a_command_through_assay_shell_open(
    cluster: Cluster, shell_image: str
) -> None:
    if shutil.which("ssh") is None:
        pytest.skip("shells need OpenSSH's ssh (apt-get install openssh-client)")
    started = cluster.client.start_shell(_config(shell_image))

    def runs() -> rest.Shell | None:
        shell = cluster.client.shell(started.id)
        if shell.state.terminal:
            lines = [e.line for e in cluster.client.task_logs(started.id)]
            raise AssertionError(f"shell {started.id} ended: {shell.message}; {lines}")
        return shell if shell.ready and shell.ssh_user else None

    shell = wait_for(f"shell {started.id} to run", runs, timeout=120)
    # Agents start containers as their root, whoever the agent runs as.
    assert shell.ssh_user == "root"
    # (`assay shell open` waits for sshd to greet through the tunnel.)
    ran = cluster.cli("shell", "open", str(shell.id), "--", "echo hi")
    assert (ran.returncode, ran.stdout) == (0, "hi\n"), ran.stderr
    assert len(containers_of("agent-1", cluster.home)) == 1
    assert [j.slots_acquired for j in _jobs(cluster)] == [1]
    # The session runs in the image: its Debian's python, not the agent's.
    ran = cluster.cli("shell", "open", str(shell.id), "--", "command -v python; exit 3")
    assert (ran.returncode, ran.stdout) == (3, "/usr/bin/python\n"), ran.stderr
    # The master's checkpoint storage is there at its own path, as in a trial's container.
    storage = cluster.home / "checkpoints"
    (storage / "from-the-host").write_text("seen\n")
    ran = cluster.cli("shell", "open", str(shell.id), "--", f"cat {storage}/from-the-host")
    assert (ran.returncode, ran.stdout) == (0, "seen\n"), ran.stderr
    cluster.cli("shell", "kill", str(shell.id), check=True)
    assert _ended(cluster.client, shell.id, timeout=60).state == "STOPPED"
    _all_free(cluster)
