"""Notebooks and shells: JupyterLab or sshd on a slot (or none), run as a task and reached through
the master (a notebook at ``/proxy/<id>/``, a shell by SSH through its tunnel) by its owner and
admins only."""

from __future__ import annotations

from pydantic import Field

from assay.protocol import TaskState
from assay.rest._common import Resource


class ServedTask(Resource):
    """What a notebook and a shell are answered with alike."""

    id: int = Field(description="Its task id (`assay task logs ID` shows its process's output).")
    name: str
    state: TaskState
    user: str
    ready: bool = Field(description="Its process has started on its agent.")
    slots: int
    resource_pool: str
    message: str
    notes: list[str] = Field(
        default_factory=list, description="What its config set that is not applied here."
    )
    created_at: float
    ended_at: float | None


class Notebook(ServedTask):
    url: str = Field(
        description="Where the master serves it: a path under the master's address, for its "
        "owner and admins. A browser signs in once by adding `?token=<access token>`, which sets "
        "a cookie for this path."
    )
    idle_timeout: float | None = Field(
        description="Seconds of idleness after which it ends and frees its slot; null: never."
    )
    idle_type: str = Field(description="What counts as use (Determined's notebook_idle_type).")


class NotebookList(Resource):
    notebooks: list[Notebook]


class Shell(ServedTask):
    ssh_user: str = Field(
        description="The account sessions run as on the agent (the agent's own); empty until "
        "it runs."
    )


class ShellList(Resource):
    shells: list[Shell]


class ShellKey(Resource):
    """What its owner's ``ssh`` needs: the key sshd lets in, and sshd's own key to check."""

    shell_id: int
    private_key: str = Field(description="OpenSSH private key, made for this shell only.")
    host_public_key: str = Field(description="The shell's sshd host key (known_hosts entry).")
    host_alias: str = Field(description="The name ssh knows the host by (HostKeyAlias).")
    ssh_user: str
