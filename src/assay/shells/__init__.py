"""What runs inside a shell's task on its agent: OpenSSH's ``sshd`` on the port the agent
reserved, letting in only its owner's key, every session starting in the task's working
directory with the task's environment (``python -m assay.shells``; the master writes that
command, see :func:`assay.config.load_shell_config`)."""

from __future__ import annotations

from assay.shells._launch import main, sshd_config

__all__ = ["main", "sshd_config"]
