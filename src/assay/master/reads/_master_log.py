"""The master's own log, kept in memory for ``assay master logs``: the last lines its loggers
wrote since it started (wherever its stdout goes: a terminal, a file of ``assay up``, a
service manager), and its effective settings with every secret masked for ``assay master
config``."""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import MASK, MasterConfig, resolve_checkpoint_storage
from assay.errors import printable

KEEP = 10_000
"""How many lines the master keeps."""

_FORMAT = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


class MasterLog(logging.Handler):
    """A logging handler keeping the last :data:`KEEP` records as numbered lines."""

    def __init__(self, keep: int = KEEP) -> None:
        super().__init__(level=logging.INFO)
        self._lines: deque[rest.MasterLogLine] = deque(maxlen=keep)
        self._next = 1
        self._guard = threading.Lock()  # records come from worker threads too

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # A line may quote what a request sent: kept as Unicode the logs answer can encode.
            text = printable(_FORMAT.format(record))
        except Exception:  # a record that cannot be formatted must not break its caller
            self.handleError(record)
            return
        with self._guard:
            self._lines.append(
                rest.MasterLogLine(
                    id=self._next, time=record.created, level=record.levelname, line=text
                )
            )
            self._next += 1

    def after(self, after: int, limit: int) -> list[rest.MasterLogLine]:
        with self._guard:
            return [line for line in self._lines if line.id > after][:limit]

    def install(self) -> None:
        logging.getLogger().addHandler(self)

    def remove(self) -> None:
        logging.getLogger().removeHandler(self)


_SECRET_KEY = re.compile(r"(password|secret|token|access_key|credential|private_key)", re.I)
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@]*:)(?P<pw>[^@]*)(?P<tail>@)", re.I)


def masked(value: Any, key: str = "") -> Any:
    """``value`` with the value of every secret-looking key, and a URL's password, masked."""
    if isinstance(value, dict):
        return {k: masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, key) for v in value]
    if value is not None and _SECRET_KEY.search(key):
        return MASK
    if isinstance(value, str):
        return _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}{m['tail']}", value)
    return value


def effective_config(settings: MasterConfig, db_url: str, assay_home: Path) -> dict[str, Any]:
    """The settings the master runs with (defaults filled in), secrets masked: the database it
    opened (``db_url``), its home, and the checkpoint storage experiments that name none get,
    where ``settings`` leaves them to their defaults."""
    config = settings.model_dump(mode="json")
    storage = resolve_checkpoint_storage(None, settings.checkpoint_storage, assay_home)
    config.update(
        db=db_url,
        assay_home=str(assay_home),
        checkpoint_storage=storage.to_json() if storage is not None else None,
    )
    result: dict[str, Any] = masked(config)
    return result
