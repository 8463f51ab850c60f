"""searcher snapshots in a table of their own, out of the experiment's row

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "searcher_snapshots",
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"]),
        sa.PrimaryKeyConstraint("experiment_id"),
    )
    op.execute(
        "INSERT INTO searcher_snapshots (experiment_id, state) SELECT id, searcher_state"
        " FROM experiments WHERE searcher_state IS NOT NULL"
    )
    # Not a batch operation: SQLite's batch mode copies the table, and dropping the old one
    # fails while trials refer to it (foreign keys are on). Both databases drop a column.
    op.execute("ALTER TABLE experiments DROP COLUMN searcher_state")


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("searcher_state", sa.JSON(), nullable=True))
    op.execute(
        "UPDATE experiments SET searcher_state = (SELECT state FROM searcher_snapshots"
        " WHERE searcher_snapshots.experiment_id = experiments.id)"
    )
    op.drop_table("searcher_snapshots")
