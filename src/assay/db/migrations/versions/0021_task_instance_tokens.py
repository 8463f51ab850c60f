"""token_digest on task_instances: the SHA-256 of the token a task's current run gets as
``DET_USER_TOKEN``, which Determined's API takes as the task's owner while the run lives; empty
for every run started before (they ran without one)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("task_instances") as batch:
        batch.add_column(sa.Column("token_digest", sa.String(length=64), nullable=True))
        batch.create_index("ix_task_instances_token", ["token_digest"])


def downgrade() -> None:
    with op.batch_alter_table("task_instances") as batch:
        batch.drop_index("ix_task_instances_token")
        batch.drop_column("token_digest")
