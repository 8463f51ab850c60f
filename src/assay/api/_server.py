"""Running the master process: database, orchestration and the HTTP server together."""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path
from types import FrameType

import uvicorn
from fastapi import FastAPI

from assay.api._app import create_app
from assay.api._collector import tune_collector
from assay.api._guard import WILDCARD_BINDS, allowed_hosts, is_loopback
from assay.config import MasterConfig
from assay.errors import AssayError, InvalidConfig
from assay.master import Master
from assay.protocol import PING_SECONDS

log = logging.getLogger("assay.master")

ADMIN_PASSWORD_ENV = "ASSAY_ADMIN_PASSWORD"
"""The first admin's password; without it a random one is made and logged once."""


def run_master(settings: MasterConfig, assay_home: Path) -> None:
    """Serve until interrupted. SQLite under ``assay_home`` unless ``settings.db`` names a URL.

    Raises :class:`InvalidConfig` before anything is opened or bound when the TLS files cannot
    be used."""
    tls = settings.tls
    if tls is not None:
        check_tls(tls.cert, tls.key)
    try:
        # It holds the database and the agent token: its owner's only, when it is made here.
        assay_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise AssayError(f"cannot make the master's home {assay_home}: {exc.strerror}") from None
    master = Master.open(
        settings, assay_home, admin_password=os.environ.get(ADMIN_PASSWORD_ENV) or None
    )
    app = create_app(master)
    tune_collector(master.core.measures)
    scheme = "https" if tls else "http"
    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    log.info(
        "master on %s://%s:%d (database: %s)",
        scheme,
        shown,
        settings.port,
        _safe(master.db.url),
    )
    _warn_about_exposure(settings)
    try:
        _Server(server_config(app, settings), master).run()
    except KeyboardInterrupt:
        # uvicorn has shut the master down by now and raises Ctrl-C again for its caller: a
        # master stopped as asked says so in one line, not with a traceback.
        log.info("master stopped (interrupted)")


def server_config(app: FastAPI, settings: MasterConfig) -> uvicorn.Config:
    """How uvicorn serves the master's app: its address, TLS, the agents' WebSocket pings."""
    tls = settings.tls
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        # uvicorn's own lines go to the master's handler, in its format (JSON lines too).
        log_config=None,
        ws_ping_interval=PING_SECONDS,
        ws_ping_timeout=settings.agent_ping_timeout_seconds,
        # No compression of WebSocket messages: agents' JSON on a cluster's network is cheap to
        # send as it is, and compressing both ways cost the master a twentieth of its event
        # loop at 1,000 agents (B13).
        ws_per_message_deflate=False,
        timeout_graceful_shutdown=5,
        # Trials report every few seconds to a minute on a connection they keep: uvicorn's
        # default (5 s) closed it between reports, so each report paid a new TCP connection
        # on both sides (benchmark B13).
        timeout_keep_alive=75,
        ssl_certfile=tls.cert if tls else None,
        ssl_keyfile=tls.key if tls else None,
    )


def check_tls(cert: Path, key: Path) -> None:
    """Raise :class:`InvalidConfig` naming the file unless ``cert`` and ``key`` are readable
    PEM files that belong together (and the key needs no password, which nobody could type)."""
    for what, path, marker in (
        ("certificate", cert, b"-----BEGIN CERTIFICATE-----"),
        ("key", key, b"PRIVATE KEY-----"),
    ):
        try:
            with path.open("rb") as file:
                head = file.read(_PEM_READ)
        except OSError as exc:
            raise InvalidConfig(
                f"cannot read the TLS {what} {path}: {exc.strerror or exc}"
            ) from None
        if marker not in head:
            raise InvalidConfig(f"the TLS {what} {path} is not a PEM {what} file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=_no_password)
    except (ssl.SSLError, ValueError) as exc:
        raise InvalidConfig(
            f"cannot serve TLS with certificate {cert} and key {key}: {_ssl_reason(exc)} "
            "(expected an unencrypted key that matches the certificate)"
        ) from None


_PEM_READ = 2**20


def _no_password() -> bytes:
    # Called only for an encrypted key: the master runs unattended and cannot ask for one.
    raise ValueError("the key is encrypted")


def _ssl_reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason).lower().replace("_", " ")
    return str(exc)


def _warn_about_exposure(settings: MasterConfig) -> None:
    if not is_loopback(settings.host) and settings.tls is None:
        log.warning(
            "the master listens on %s without TLS: passwords and tokens cross the network in "
            "clear text; give it a certificate with --tls-cert/--tls-key",
            settings.host,
        )
    if settings.host in WILDCARD_BINDS and not settings.allowed_hosts:
        log.warning(
            "the master listens on every address but answers only requests addressed to %s; "
            "name the others it is reached by with --allowed-host",
            ", ".join(allowed_hosts(settings.host)),
        )


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
