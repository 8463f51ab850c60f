"""The OpenAPI document the master serves, made without starting one (the web UI's TypeScript
types are generated from it)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from assay.api._app import create_app
from assay.config import MasterConfig
from assay.master import Master


def openapi_document() -> dict[str, Any]:
    """What ``GET /openapi.json`` answers, from the same code on a throw-away database (the
    master is made, never started)."""
    with tempfile.TemporaryDirectory() as home:
        master = Master.open(MasterConfig(), Path(home))
        try:
            return create_app(master).openapi()
        finally:
            master.db.dispose()


def write_openapi(path: str | Path) -> None:
    """Write :func:`openapi_document` to ``path`` as stable, indented JSON."""
    text = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    Path(path).write_text(text, encoding="utf-8")
