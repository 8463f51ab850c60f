"""started_at on experiments and trials: when the first trial (or run) started running

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("started_at", sa.Float(), nullable=True))
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("started_at", sa.Float(), nullable=True))
    # What ran before the upgrade: the first start of each trial's allocations, and of each
    # experiment's trials.
    op.execute(
        "UPDATE trials SET started_at = (SELECT MIN(allocations.started_at) FROM allocations"
        " WHERE allocations.trial_id = trials.id)"
    )
    op.execute(
        "UPDATE experiments SET started_at = (SELECT MIN(trials.started_at) FROM trials"
        " WHERE trials.experiment_id = experiments.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("started_at")
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("started_at")
