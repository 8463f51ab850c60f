"""Running the master process: database, orchestration and the HTTP server together."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from types import FrameType

import uvicorn

from assay.api._app import create_app
from assay.config import MasterConfig
from assay.master import Master

log = logging.getLogger("assay.master")

ADMIN_PASSWORD_ENV = "ASSAY_ADMIN_PASSWORD"
"""The first admin's password; without it a random one is made and logged once."""


def run_master(settings: MasterConfig, assay_home: Path) -> None:
    """Serve until interrupted. SQLite under ``assay_home`` unless ``settings.db`` names a URL."""
    master = Master.open(
        settings, assay_home, admin_password=os.environ.get(ADMIN_PASSWORD_ENV) or None
    )
    app = create_app(master)
    url = _safe(master.db.url)
    log.info("master on http://%s:%d (database: %s)", settings.host, settings.port, url)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        ws_ping_interval=5.0,
        ws_ping_timeout=20.0,
        timeout_graceful_shutdown=5,
    )
    _Server(config, master).run()


class _Server(uvicorn.Server):
    """Answers the open long-polls as soon as a stop is asked for: uvicorn waits for open
    requests before it shuts the application down, and a long-poll would hold it up."""

    def __init__(self, config: uvicorn.Config, master: Master) -> None:
        super().__init__(config)
        self.master = master

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        loop = asyncio.get_event_loop()
        loop.call_soon_threadsafe(self.master.begin_shutdown)
        super().handle_exit(sig, frame)


def _safe(url: str) -> str:
    """The database URL without its password, for logs."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}@{host}"
    return url
