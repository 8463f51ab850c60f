"""experiments.source (how the config was written: assay, nni-v2 or nni-v1) and
trials.waiting_at (where its searcher holds a WAITING trial); trials released to wait for
their searcher, which were PAUSED in an ACTIVE experiment, become WAITING

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("source", sa.String(length=16), nullable=False, server_default="assay")
        )
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("waiting_at", sa.String(length=64), nullable=True))
    # Experiments submitted before this column keep "assay": their trials were ranked by their
    # best validation, and stay so.
    # A trial of an ACTIVE experiment is PAUSED only when its searcher released it to wait (a
    # user's pause pauses the experiment, and activating it queued every trial with work).
    op.execute(
        "UPDATE trials SET state = 'WAITING' WHERE state = 'PAUSED' AND experiment_id IN "
        "(SELECT id FROM experiments WHERE state = 'ACTIVE')"
    )


def downgrade() -> None:
    op.execute("UPDATE trials SET state = 'PAUSED' WHERE state = 'WAITING'")
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("waiting_at")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("source")
