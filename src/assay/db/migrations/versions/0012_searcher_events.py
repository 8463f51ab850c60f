"""searcher event log: the events after the last searcher snapshot, replayed on restart

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing experiments keep their snapshot, which holds every event so far (seq 0).
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("searcher_seq", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("searcher_snapshot_seq", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "searcher_events",
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("event", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["experiment_id"], ["experiments.id"]),
        sa.PrimaryKeyConstraint("experiment_id", "seq"),
    )


def downgrade() -> None:
    # The log's events are lost: an experiment restored after a downgrade resumes from its
    # last compaction snapshot.
    op.drop_table("searcher_events")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("searcher_snapshot_seq")
        batch.drop_column("searcher_seq")
