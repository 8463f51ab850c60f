"""overdue allocations

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 01:08:22.566192
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

OVERDUE = "did not stop within its preemption timeout; killed"


revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("overdue", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # 0002 marked such allocations with this exit reason.
    allocations = sa.table("allocations", sa.column("overdue"), sa.column("exit_reason"))
    op.execute(
        allocations.update().where(allocations.c.exit_reason == OVERDUE).values(overdue=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.drop_column("overdue")
