"""slot_count on allocations: how many slots an allocation holds, so the job queue counts each
job's slots in SQL instead of decoding every live allocation's ``slots`` JSON on each read

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("slot_count", sa.Integer(), nullable=False, server_default="0"))
    bind = op.get_bind()
    table = sa.table("allocations", sa.column("id", sa.String), sa.column("slot_count", sa.Integer))
    rows = bind.execute(sa.text("SELECT id, slots FROM allocations")).all()
    counts = []
    for allocation_id, slots in rows:
        held = json.loads(slots) if isinstance(slots, str) else slots
        n = sum(len(ids) for ids in (held or {}).values())
        if n:
            counts.append({"key": allocation_id, "n": n})
    if counts:
        bind.execute(
            table.update()
            .where(table.c.id == sa.bindparam("key"))
            .values(slot_count=sa.bindparam("n")),
            counts,
        )


def downgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("slot_count")
