"""The database: SQLAlchemy models, Alembic migrations, and the only code that writes SQL.

Everything else reaches the tables through the per-noun repository modules (``experiments``,
``trials``, ``allocations``, ``checkpoints``, ``jobs``, ``agents``, ``logs``, ``metrics``,
``instances``, ``notes``, ``tasks``, ``contexts``, ``cluster``, ``users``, ``tokens``,
``searcher_events``, ``registry`` for the model registry, and ``changes`` for what a
transaction changed): functions that take a :class:`Session` and read rows, create them, or run
a bulk statement. Callers change a row they were given by setting its attributes; the session
writes it when the transaction commits.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from assay.db import (
    agents,
    allocations,
    changes,
    checkpoints,
    cluster,
    contexts,
    experiments,
    instances,
    jobs,
    logs,
    metrics,
    notes,
    registry,
    searcher_events,
    tasks,
    tokens,
    trials,
    users,
)
from assay.db._database import Database, sqlite_url
from assay.db._models import (
    AgentRecord,
    Allocation,
    Base,
    Checkpoint,
    ClusterRecord,
    Context,
    Experiment,
    ExperimentNote,
    Instance,
    Job,
    Metric,
    Model,
    ModelVersion,
    SearcherEvent,
    Task,
    TaskInstance,
    TaskLog,
    Token,
    Trial,
    User,
    finite_json,
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
    "ExperimentNote",
    "Instance",
    "Job",
    "Metric",
    "Model",
    "ModelVersion",
    "SearcherEvent",
    "Session",
    "Task",
    "TaskInstance",
    "TaskLog",
    "Token",
    "Trial",
    "User",
    "agents",
    "allocations",
    "changes",
    "checkpoints",
    "cluster",
    "contexts",
    "experiments",
    "finite_json",
    "instances",
    "jobs",
    "logs",
    "metrics",
    "notes",
    "registry",
    "searcher_events",
    "sqlite_url",
    "tasks",
    "tokens",
    "trials",
    "users",
]
