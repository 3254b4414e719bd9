"""Submissions carry the image's modality, domain, stain and licence (μ-Bench's cognition loop).

Additive: existing submissions keep empty values, which ``review submissions --out`` writes as
empty cells for ``scopebench build ingest`` to report.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28 09:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_COLUMNS = (("modality", 128), ("domain", 128), ("stain", 128), ("license", 255))


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, length in _COLUMNS:
            batch_op.add_column(sa.Column(name, sa.String(length), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, _ in reversed(_COLUMNS):
            batch_op.drop_column(name)
