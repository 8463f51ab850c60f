"""container_runtime on agents: the runtime an agent runs containers with (empty: none)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(
            sa.Column("container_runtime", sa.String(length=32), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("container_runtime")
