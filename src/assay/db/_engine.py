"""Where a database URL becomes an engine (the one place, so a URL no driver takes is refused
the same way everywhere), and where the migrations live."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError

from assay.errors import InvalidConfig

MIGRATIONS = Path(__file__).parent / "migrations"


def open_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; a URL SQLAlchemy cannot open is an :class:`InvalidConfig`
    naming it (its password masked) and the two kinds assay takes."""
    try:
        return create_engine(url, **kwargs)
    except ArgumentError as exc:  # NoSuchModuleError (an unknown dialect) is one too
        shown = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
        raise InvalidConfig(
            f"db: {shown!r} is not a database URL assay opens ({exc}); give "
            "sqlite:///PATH or postgresql+psycopg://USER@HOST/DATABASE"
        ) from None
