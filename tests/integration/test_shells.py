"""Shells on a real cluster: OpenSSH's sshd started as a task on a real agent, reached by the
system's ssh through the master's tunnel (``assay shell open``, and the line
``show-ssh-command`` prints), by its owner only."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from assay import rest
from assay.client import Client
from tests.integration.cluster import Cluster, serve, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (shutil.which("ssh") and (shutil.which("sshd") or Path("/usr/sbin/sshd").exists())),
        reason="shells need OpenSSH's ssh and sshd (apt-get install openssh-client "
        "openssh-server; `make system-deps`)",
    ),
]


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("shells") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def shell(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> rest.Shell:
    """The admin's shell on no slot, started with `assay shell start -d` in a context
    directory."""
    code = tmp_path_factory.mktemp("shell-context")
    (code / "data.txt").write_text("from the context\n")
    started = cluster.cli(
        "shell", "start", "-d", "--json", "--config", "resources.slots=0", "-c", str(code),
        check=True,
    )  # fmt: skip
    shell_id = int(json.loads(started.stdout)["id"])
    return wait_for(
        f"shell {shell_id} to run",
        lambda: (s := cluster.client.shell(shell_id)).ready and s.ssh_user and s,
        timeout=60,
    )


def test_shell_open_runs_a_command_in_the_context_and_passes_its_output_and_exit_code(
    cluster: Cluster, shell: rest.Shell
) -> None:
    ran = cluster.cli("shell", "open", str(shell.id), "--", "cat data.txt; echo hi", check=True)
    assert ran.stdout == "from the context\nhi\n"
    failed = cluster.cli("shell", "open", str(shell.id), "--", "exit 7")
    assert failed.returncode == 7, failed.stderr
    # A session's end is ssh closing its tunnel: nothing the master logs as its error.
    assert "Exception in ASGI application" not in cluster.log("master")


def test_the_printed_ssh_command_works_with_the_systems_ssh(
    cluster: Cluster, shell: rest.Shell
) -> None:
    line = cluster.cli("shell", "show-ssh-command", str(shell.id), check=True).stdout.strip()
    assert line.startswith("ssh -o 'ProxyCommand=")
    ran = subprocess.run(
        f"{line} 'echo $ASSAY_TASK_ID; pwd'",
        shell=True,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    task_id, workdir = ran.stdout.split()
    assert task_id == str(shell.id)
    assert Path(workdir, "data.txt").read_text() == "from the context\n"


def test_only_the_owner_and_admins_reach_a_shell_and_its_key(
    cluster: Cluster, shell: rest.Shell
) -> None:
    bob = cluster.add_user("bob")
    url = f"ws://127.0.0.1:{cluster.port}/api/v1/shells/{shell.id}/tunnel"
    for headers, status in (({"Authorization": f"Bearer {bob.http.token}"}, 403), ({}, 401)):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers, open_timeout=10)
        assert refused.value.response.status_code == status
    with pytest.raises(Exception, match="belongs to admin"):
        bob.shell_key(shell.id)
    # The owner's tunnel speaks SSH.
    with connect(url, additional_headers=cluster.auth_headers(), open_timeout=10) as ws:
        assert ws.recv(timeout=10)[:4] == b"SSH-"


def test_a_killed_shell_ends_and_its_tunnel_says_so(cluster: Cluster) -> None:
    c: Client = cluster.client
    started = c.start_shell("description: short-lived\n")
    wait_for("the shell to run", lambda: c.shell(started.id).ready, timeout=60)
    listed = json.loads(cluster.cli("shell", "list", "--json", check=True).stdout)
    assert started.id in [s["id"] for s in listed]
    line = cluster.cli("shell", "show-ssh-command", str(started.id), check=True).stdout
    known = Path(
        next(w for w in shlex.split(line) if w.startswith("UserKnownHostsFile=")).split("=", 1)[1]
    )
    assert known.exists()
    cluster.cli("shell", "kill", str(started.id), check=True)
    assert not known.parent.exists(), "the killed shell's key is left on the user's machine"
    ended = wait_for(
        "the shell to end", lambda: (s := c.shell(started.id)).state.terminal and s, timeout=60
    )
    assert ended.state == "STOPPED"
    opened = cluster.cli("shell", "open", str(started.id), "--", "true")
    assert opened.returncode == 1
    # Why it ended is the master's (who stopped it), not sshd's last words on its way out.
    assert f"shell {started.id} has ended (STOPPED): stopped by admin;" in opened.stderr
    assert "signal" not in opened.stderr, opened.stderr


def test_the_ssh_command_of_a_queued_shell_is_refused_at_once_saying_why(
    cluster: Cluster, shell: rest.Shell
) -> None:
    c: Client = cluster.client
    holder = c.start_shell("description: holds the slot\n")  # the agent's one slot
    queued = c.start_shell("description: queued\n")
    try:
        wait_for("the first to run", lambda: c.shell(holder.id).ready, timeout=60)
        assert c.shell(queued.id).state == "WAITING"
        line = cluster.cli("shell", "show-ssh-command", str(queued.id), timeout=30)
        assert line.returncode == 1
        assert f"shell {queued.id} is queued: the line is printed once it runs" in line.stderr
    finally:
        for started in (queued, holder):
            cluster.cli("shell", "kill", str(started.id), check=True)
