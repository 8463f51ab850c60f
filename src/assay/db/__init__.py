"""The database: SQLAlchemy models, Alembic migrations, queries. The only code that writes SQL."""

from __future__ import annotations

from assay.db._database import Database, sqlite_url
from assay.db._models import (
    AgentRecord,
    Allocation,
    Base,
    Checkpoint,
    ClusterRecord,
    Context,
    Experiment,
    Instance,
    Job,
    Metric,
    TaskLog,
    Trial,
)

__all__ = [
    "AgentRecord",
    "Allocation",
    "Base",
    "Checkpoint",
    "ClusterRecord",
    "Context",
    "Database",
    "Experiment",
    "Instance",
    "Job",
    "Metric",
    "TaskLog",
    "Trial",
    "sqlite_url",
]
