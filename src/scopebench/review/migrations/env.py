"""Alembic environment of the review database (migrations ship inside the package).

Used programmatically (:func:`scopebench.review.db.upgrade` hands over a connection), or from the
``alembic`` command with ``-x url=…`` / ``sqlalchemy.url`` set.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine

from scopebench.review.db import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Any) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database URL: alembic -x url=sqlite:///review.db upgrade head")
    with create_engine(url).connect() as conn:
        _run(conn)
        conn.commit()
