"""experiment time limits (active time, trials ended for running too long) and experiment notes

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 01:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("active_seconds", sa.Float(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("active_since", sa.Float(), nullable=True))
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(
            sa.Column("timed_out", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "experiment_notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_experiment_notes_experiment", "experiment_notes", ["experiment_id", "id"])
    # Experiments active before this migration have no active_since: the master starts their
    # clock when it next looks at them (their earlier active time is unknown).


def downgrade() -> None:
    op.drop_index("ix_experiment_notes_experiment", table_name="experiment_notes")
    op.drop_table("experiment_notes")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("timed_out")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("active_since")
        batch.drop_column("active_seconds")
