"""The job queue as users see and change it (order, priority, weight, why a job waits),
for experiments and tasks alike, and whether a pool could ever hold a job.
"""

from __future__ import annotations

from assay.master.queue import _jobs as jobs
from assay.master.queue import _room as room
from assay.master.queue._jobs import job_view

__all__ = ["job_view", "jobs", "room"]
