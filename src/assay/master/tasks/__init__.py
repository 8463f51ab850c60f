"""Work that is not an experiment: OpenPAI jobs, commands and generic tasks, and TensorBoards
and notebooks run as such tasks (served through the master's proxy); their lifecycle and rules.
"""

from __future__ import annotations

from assay.master.tasks import _lifecycle as lifecycle
from assay.master.tasks._allocations import TaskAllocations
from assay.master.tasks._notebooks import NotebookService
from assay.master.tasks._proxied import ProxyTarget
from assay.master.tasks._service import LOG_PAGE, TaskService
from assay.master.tasks._tensorboards import TensorBoardService

__all__ = [
    "LOG_PAGE",
    "NotebookService",
    "ProxyTarget",
    "TaskAllocations",
    "TaskService",
    "TensorBoardService",
    "lifecycle",
]
