"""preemption deadlines, distributed allocations, autoscaled instances

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 23:35:01.004855
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "instances",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("pool", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("launched_at", sa.Float(), nullable=False),
        sa.Column("idle_since", sa.Float(), nullable=True),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.create_index("ix_instances_pool_state", ["pool", "state"], unique=False)

    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("preempt_at", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("exits", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(sa.Column("rendezvous_port", sa.Integer(), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.drop_column("rendezvous_port")
        batch_op.drop_column("exits")
        batch_op.drop_column("preempt_at")

    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index("ix_instances_pool_state")

    op.drop_table("instances")
