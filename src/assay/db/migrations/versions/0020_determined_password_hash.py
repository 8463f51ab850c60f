"""det_password_hash on users: an argon2 hash of the salted SHA-512 Determined's clients send
for a password, so the real ``det`` signs in; empty for every user until their password is set
again or they next sign in with assay

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("det_password_hash", sa.String(length=256), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("det_password_hash")
