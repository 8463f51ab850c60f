"""What users and the web UI read: experiment, trial and log views, learning curves,
hyperparameter importance and the master's own log.
"""

from __future__ import annotations

from assay.master.reads._analysis import Analysis
from assay.master.reads._live import LiveAllocation
from assay.master.reads._master_log import KEEP, MasterLog, effective_config
from assay.master.reads._pages import ExperimentsAsk, Memory, TrialsAsk
from assay.master.reads._pool import ReadPool
from assay.master.reads._reads import LOG_PAGE, Reads

__all__ = [
    "KEEP",
    "LOG_PAGE",
    "Analysis",
    "ExperimentsAsk",
    "LiveAllocation",
    "MasterLog",
    "Memory",
    "ReadPool",
    "Reads",
    "TrialsAsk",
    "effective_config",
]
