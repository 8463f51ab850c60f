"""the cluster's agent token

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:00:00.000000

Agents must always present a token; a master not given one makes one on its first start and
keeps it here, so it survives restarts and masters sharing the database agree on it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("cluster", schema=None) as batch_op:
        batch_op.add_column(sa.Column("agent_token", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cluster", schema=None) as batch_op:
        batch_op.drop_column("agent_token")
