"""The agent: runs trial processes on one machine's slots for the master."""

from __future__ import annotations

from assay.agent._backoff import Backoff
from assay.agent._daemon import Agent
from assay.agent._executor import LocalProcesses
from assay.agent._relay import ReportRelay
from assay.agent._runner import AgentEnv, AllocationRunner, startup_script
from assay.agent._slots import detect_slots, visible_devices
from assay.protocol import Slot

__all__ = [
    "Agent",
    "AgentEnv",
    "AllocationRunner",
    "Backoff",
    "LocalProcesses",
    "ReportRelay",
    "Slot",
    "detect_slots",
    "startup_script",
    "visible_devices",
]
