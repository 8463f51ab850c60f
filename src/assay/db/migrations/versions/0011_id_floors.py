"""the highest id deleted rows had, so SQLite never hands a deleted experiment's or trial's id
out again

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 16:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "id_floors",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("id_floors")
