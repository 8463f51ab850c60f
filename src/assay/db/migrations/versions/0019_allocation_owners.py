"""allocation_owners: every allocation of every kind of work, with the kind that owns it, so
the master learns an allocation's kind from one row (nothing parses ids, no kind is asked in
turn); filled from the trials' allocations and the task instances' current ones

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "allocation_owners",
        sa.Column("id", sa.String(length=128), primary_key=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.execute(
        "INSERT INTO allocation_owners (id, kind, created_at) "
        "SELECT id, 'trial', created_at FROM allocations"
    )
    op.execute(
        "INSERT INTO allocation_owners (id, kind, created_at) "
        "SELECT allocation_id, 'task', COALESCE(started_at, 0) FROM task_instances "
        "WHERE allocation_id IS NOT NULL AND allocation_id <> ''"
    )


def downgrade() -> None:
    op.drop_table("allocation_owners")
