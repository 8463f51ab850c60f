"""What runs inside a notebook's task on its agent: JupyterLab under the master's proxy path,
ended by its launcher once it has been idle for its ``idle_timeout``
(``python -m assay.notebooks``; the master writes that command, see
:func:`assay.config.load_notebook_config`)."""

from __future__ import annotations

from assay.notebooks._idle import IdleClock, Usage, is_idle
from assay.notebooks._launch import jupyter_argv, main

__all__ = ["IdleClock", "Usage", "is_idle", "jupyter_argv", "main"]
