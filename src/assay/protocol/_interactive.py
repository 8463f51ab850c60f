"""What the master tells a notebook's or a shell's task process (the launchers in
``assay.notebooks`` and ``assay.shells`` read it): its secret variables, and what counts as a
notebook's use."""

from __future__ import annotations

from enum import StrEnum

NOTEBOOK_TOKEN_ENV = "ASSAY_NOTEBOOK_TOKEN"
"""JupyterLab's own token: made by the master for each notebook, sent by its proxy only."""
SHELL_HOST_KEY_ENV = "ASSAY_SHELL_HOST_KEY"
"""The shell's sshd host key (private, OpenSSH format), made by the master for each shell."""
SHELL_AUTHORIZED_KEY_ENV = "ASSAY_SHELL_AUTHORIZED_KEY"
"""The public key of the shell's owner: the only key its sshd lets in."""


class IdleType(StrEnum):
    """What counts as use of a notebook (Determined's ``notebook_idle_type``)."""

    KERNELS_OR_TERMINALS = "kernels_or_terminals"
    """Idle while no kernel and no terminal is running."""
    KERNEL_CONNECTIONS = "kernel_connections"
    """Idle while no kernel has a client connected and no terminal is running."""
    ACTIVITY = "activity"
    """Idle while nothing happens: no request, no kernel or terminal activity."""
