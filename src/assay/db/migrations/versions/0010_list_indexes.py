"""indexes for the sorted and filtered experiment and trial lists

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


_EXPERIMENTS = {
    "ix_experiments_name": ["name"],
    "ix_experiments_owner": ["owner"],
    "ix_experiments_created_at": ["created_at"],
    "ix_experiments_ended_at": ["ended_at"],
}


def upgrade() -> None:
    for name, columns in _EXPERIMENTS.items():
        op.create_index(name, "experiments", columns)
    # (experiment, score, id) serves "best first, ties by id" from the index alone; the old
    # (experiment, score) index is its prefix.
    op.create_index(
        "ix_trials_experiment_score_id", "trials", ["experiment_id", "best_score", "id"]
    )
    op.drop_index("ix_trials_experiment_score", table_name="trials")
    op.create_index("ix_trials_experiment_steps", "trials", ["experiment_id", "steps_completed"])


def downgrade() -> None:
    op.drop_index("ix_trials_experiment_steps", table_name="trials")
    op.create_index("ix_trials_experiment_score", "trials", ["experiment_id", "best_score"])
    op.drop_index("ix_trials_experiment_score_id", table_name="trials")
    for name in _EXPERIMENTS:
        op.drop_index(name, table_name="experiments")
