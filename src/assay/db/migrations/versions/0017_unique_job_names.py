"""tasks.job_name: an OpenPAI job's name, unique per owner

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 02:00:00.000000

Earlier versions let a new job take the name of an ended one, so a database may hold several
jobs of one owner and name. Each keeps its row and its name; the newest is the one
``owner~name`` named, so it alone gets ``job_name``, and the unique index holds from then on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("job_name", sa.String(length=256), nullable=True))
    # 'job' is JobSpecKind.JOB as the tasks table stores it.
    op.execute(
        "UPDATE tasks SET job_name = name WHERE id IN "
        "(SELECT MAX(id) FROM tasks WHERE kind = 'job' GROUP BY owner, name)"
    )
    op.create_index("uq_tasks_owner_job_name", "tasks", ["owner", "job_name"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_tasks_owner_job_name", table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("job_name")
