"""Work that is not an experiment: OpenPAI jobs, commands and generic tasks, and TensorBoards,
notebooks and shells run as such tasks (reached through the master); their lifecycle and
rules.
"""

from __future__ import annotations

from assay.master.tasks import _lifecycle as lifecycle
from assay.master.tasks._allocations import TaskAllocations
from assay.master.tasks._notebooks import NotebookService
from assay.master.tasks._proxied import ProxyTarget
from assay.master.tasks._service import LOG_PAGE, TaskService
from assay.master.tasks._shells import ShellService
from assay.master.tasks._tensorboards import TensorBoardService

__all__ = [
    "LOG_PAGE",
    "NotebookService",
    "ProxyTarget",
    "ShellService",
    "TaskAllocations",
    "TaskService",
    "TensorBoardService",
    "lifecycle",
]
