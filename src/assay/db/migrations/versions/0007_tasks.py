"""jobs that are not experiments: tasks, their instances, and their log lines

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("secrets", sa.JSON(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("retrying", sa.Boolean(), nullable=False),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["context_id"], ["contexts.id"]),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_tasks_state", "tasks", ["state"])
    op.create_index("ix_tasks_owner_name", "tasks", ["owner", "name"])
    op.create_table(
        "task_instances",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=128), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("allocation_id", sa.String(length=128), nullable=True),
        sa.Column("live", sa.Boolean(), nullable=False),
        sa.Column("started", sa.Boolean(), nullable=False),
        sa.Column("kill_requested", sa.Boolean(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=True),
        sa.Column("host", sa.String(length=256), nullable=False),
        sa.Column("slots", sa.JSON(), nullable=False),
        sa.Column("ports", sa.JSON(), nullable=False),
        sa.Column("cpu", sa.Float(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("task_id", "role", "index"),
    )
    op.create_index("ix_task_instances_live", "task_instances", ["live"])
    op.create_index("ix_task_instances_allocation", "task_instances", ["allocation_id"])
    with op.batch_alter_table("task_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("task_id", sa.Integer(), nullable=True))
        batch_op.create_index("ix_task_logs_task_id", ["task_id", "id"])


def downgrade() -> None:
    with op.batch_alter_table("task_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_task_logs_task_id")
        batch_op.drop_column("task_id")
    op.drop_index("ix_task_instances_allocation", table_name="task_instances")
    op.drop_index("ix_task_instances_live", table_name="task_instances")
    op.drop_table("task_instances")
    op.drop_index("ix_tasks_owner_name", table_name="tasks")
    op.drop_index("ix_tasks_state", table_name="tasks")
    op.drop_table("tasks")
