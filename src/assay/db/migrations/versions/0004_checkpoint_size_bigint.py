"""checkpoint sizes are 64-bit

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 13:30:00.000000

A checkpoint of 2 GiB or more did not fit PostgreSQL's ``integer``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints", schema=None) as batch_op:
        batch_op.alter_column(
            "size", existing_type=sa.Integer(), type_=sa.BigInteger(), existing_nullable=False
        )


def downgrade() -> None:
    with op.batch_alter_table("checkpoints", schema=None) as batch_op:
        batch_op.alter_column(
            "size", existing_type=sa.BigInteger(), type_=sa.Integer(), existing_nullable=False
        )
