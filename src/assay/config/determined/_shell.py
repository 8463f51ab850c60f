"""Determined's shell configs (``det shell start --config-file``) read into a :class:`JobSpec`:
one instance that runs OpenSSH's ``sshd`` through assay's launcher (``python -m assay.shells``)
on a port its agent reserves, reached only through the master's tunnel.

A shell config is a command config without an entrypoint: the same ``resources``,
``environment``, ``bind_mounts`` and ``work_dir``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.config._base import Problem
from assay.config._jobload import validated
from assay.config._jobspec import JobSpec, JobSpecKind
from assay.config.determined._task import (
    PYTHON_VAR,
    ServedConfig,
    find_python,
    read_config,
    task_spec,
)

SHELL_ROLE = "shell"
SHELL_PORT = "ssh"
"""The label of the port sshd listens on (its agent reserves it)."""
SHELL_LAUNCHER = "assay.shells"
_FORMAT = "determined-shell"
_WHAT = "shell config"


class ShellConfig(ServedConfig):
    """A Determined shell config: a command config that runs sshd."""

    runs = (
        "a shell runs sshd, not an entrypoint (`assay shell open ID -- COMMAND` runs a command "
        "in it, `assay cmd run` one on its own)"
    )

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems = super()._cross_checks(data)
        for key in ("idle_timeout", "notebook_idle_type"):
            if key in data:
                problems.append(((key,), "applies to notebooks; a shell lasts until it is killed"))
        return problems


def shell_script() -> list[str]:
    """The instance's commands: a check that sshd and Python are there, then the launcher on
    the reserved port."""
    sshd = (
        '{ command -v sshd || [ -x /usr/sbin/sshd ]; } >/dev/null 2>&1 || { echo "assay: '
        "OpenSSH's sshd is not installed on agent $ASSAY_AGENT_ID (or in its image); install it "
        'there (apt-get install openssh-server)" >&2; exit 1; }'
    )
    python = find_python("a shell needs Python with assay")
    run = (
        f'exec "${PYTHON_VAR}" -m {SHELL_LAUNCHER} --host "$PAI_CONTAINER_HOST_IP" '
        f'--port "$PAI_CONTAINER_HOST_{SHELL_PORT}_PORT_LIST"'
    )
    return [sshd, python, run]


def load_shell_config(
    raw_or_text: Any, *, filename: str = "", overrides: Sequence[str] = ()
) -> JobSpec:
    """The spec of a shell config, given as parsed data or YAML text (empty: every default),
    with ``key.path=value`` overrides applied.

    Raises :class:`~assay.errors.InvalidConfig` listing every problem.
    """
    raw, found = read_config(raw_or_text, _WHAT, filename=filename, overrides=overrides, empty={})
    cfg = validated(ShellConfig, raw, _WHAT, found)
    return task_spec(
        cfg,
        JobSpecKind.SHELL,
        shell_script(),
        name=cfg.description or "shell",
        role_name=SHELL_ROLE,
        ports={SHELL_PORT: 1},
        source_format=_FORMAT,
    )
