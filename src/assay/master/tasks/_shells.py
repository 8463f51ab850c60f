"""Shells: OpenSSH's sshd as a task of one instance on a slot (or none), in its uploaded context
directory, reached by SSH only through the master's tunnel (a WebSocket the owner's ``ssh``
runs as its ``ProxyCommand``), by its owner and admins (:mod:`._proxied`).

The master makes each shell two key pairs with ``ssh-keygen``: sshd's host key, sent to the
task as a secret variable (its public half is what the owner's ``ssh`` checks), and the key
sshd lets in, whose public half goes to the task and whose private half is kept in the task's
secrets (stored by the master, never sent to an agent) and given to the owner only.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from assay import rest
from assay.config import JobSpec, JobSpecKind
from assay.db import Session, Task, tasks
from assay.errors import Conflict, InvalidRequest
from assay.master.identity import Actor
from assay.master.kernel import AgentView
from assay.master.tasks._served import ServedTasks, common_fields
from assay.protocol import SHELL_AUTHORIZED_KEY_ENV, SHELL_HOST_KEY_ENV, TaskState

PRIVATE_KEY_SECRET = "ssh_private_key"
"""The task's secret holding the owner's private key."""
HOST_PUBLIC_KEY = "host_public_key"
"""The spec's parameter holding sshd's public host key (nothing secret)."""
CONTAINER_USER = "root"
"""Who a process in a container runs as (agents start containers as their root)."""


def key_pair(comment: str) -> tuple[str, str]:
    """A new ed25519 key pair from ``ssh-keygen``: (private key, public key line)."""
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        raise Conflict(
            "the master cannot make SSH keys: ssh-keygen (OpenSSH's client) is not installed on "
            "its machine; install it there (apt-get install openssh-client)"
        )
    with tempfile.TemporaryDirectory(prefix="assay-keys-") as directory:
        path = Path(directory) / "key"
        made = subprocess.run(
            [keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if made.returncode != 0:
            said = (made.stderr or made.stdout).strip().splitlines()
            raise Conflict(
                f"the master could not make SSH keys: ssh-keygen exited {made.returncode}"
                + (f" ({said[-1]})" if said else "")
            )
        return path.read_text(), (path.parent / "key.pub").read_text().strip()


def host_alias(task_id: int) -> str:
    """The name the owner's ssh knows the shell by (its ``HostKeyAlias``)."""
    return f"assay-shell-{task_id}"


class ShellService(ServedTasks[rest.Shell]):
    kind = JobSpecKind.SHELL
    noun = "shell"

    async def start(self, actor: Actor, spec: JobSpec, context: bytes | None) -> rest.Shell:
        """Queue the shell ``spec`` (from :func:`assay.config.load_shell_config`) as a task of
        ``actor``'s, starting in ``context`` (a tar.gz) or an empty directory."""
        if spec.kind != JobSpecKind.SHELL:
            raise InvalidRequest(f"not a shell's spec: a {spec.kind.value}")
        # Refused where it could never run before any key is made for it.
        spec = await self.task_service.placed(spec)
        host_private, host_public = await asyncio.to_thread(key_pair, "assay shell host key")
        user_private, user_public = await asyncio.to_thread(key_pair, f"{actor.username} shell")
        secret_env = {SHELL_HOST_KEY_ENV, SHELL_AUTHORIZED_KEY_ENV}
        spec = spec.model_copy(
            update={
                "env": {
                    **spec.env,
                    SHELL_HOST_KEY_ENV: host_private,
                    SHELL_AUTHORIZED_KEY_ENV: user_public,
                },
                "secret_env": sorted({*spec.secret_env, *secret_env}),
                "secrets": {**spec.secrets, PRIVATE_KEY_SECRET: user_private},
                "parameters": {**spec.parameters, HOST_PUBLIC_KEY: host_public},
            }
        )
        task = await self.task_service.submit(actor, spec, context)
        return await self.get(task.id)

    async def listing(self, *, active_only: bool = True) -> rest.ShellList:
        return rest.ShellList(shells=await self.views(active_only=active_only))

    async def key(self, actor: Actor, task_id: int) -> rest.ShellKey:
        """What the owner's ssh needs to reach shell ``task_id`` (its owner and admins only)."""

        def read(session: Session) -> rest.ShellKey:
            task = self.require(session, task_id)
            actor.require_owner(task.owner, f"shell {task_id}")
            if TaskState(task.state).terminal:
                raise Conflict(f"shell {task_id} has ended ({task.state}): {task.message}")
            return rest.ShellKey(
                shell_id=task_id,
                private_key=(task.secrets or {})[PRIVATE_KEY_SECRET],
                host_public_key=str((task.spec or {})["parameters"][HOST_PUBLIC_KEY]),
                host_alias=host_alias(task_id),
                ssh_user=self._ssh_user(session, task),
            )

        return await self.core.read(read)

    def _ssh_user(self, session: Session, task: Task) -> str:
        live = [i for i in tasks.instances(session, task.id) if i.live and i.agent_id]
        if not live:
            return ""
        if (task.spec or {}).get("containers"):
            return CONTAINER_USER
        views: dict[str, AgentView] = {a.id: a for a in self.task_service.agents()}
        agent = views.get(live[0].agent_id or "")
        return agent.user if agent is not None else ""

    def view(self, session: Session, task: Task) -> rest.Shell:
        return rest.Shell(**common_fields(session, task), ssh_user=self._ssh_user(session, task))
