"""Agent losses counted apart from failures: trials.infra_restarts and trials.lost_in_row, and
allocations.lost (its processes were lost with an agent)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(
            sa.Column("infra_restarts", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("lost_in_row", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("lost", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("lost")
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("lost_in_row")
        batch.drop_column("infra_restarts")
