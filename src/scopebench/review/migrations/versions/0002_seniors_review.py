"""Projects say whether seniors also review first-line (``review init --seniors-review``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28 07:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision (existing projects: seniors arbitrate only)."""
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("seniors_review", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("seniors_review")
