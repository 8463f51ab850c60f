"""``python -m assay.api``: the master process (what ``assay master`` and ``assay up`` start)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from assay.api._server import run_master
from assay.config import load_master_config
from assay.errors import AssayError
from assay.protocol import AGENT_TOKEN_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay master", description="Run the assay master.")
    parser.add_argument("--config", type=Path, help="master.yaml (resource pools, storage...)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8080)")
    parser.add_argument("--db", help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db")
    parser.add_argument(
        "--home", type=Path, help="state directory (default $ASSAY_HOME or ~/.assay)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = load_master_config(args.config)
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    updates: dict[str, object] = {}
    if args.host:
        updates["host"] = args.host
    if args.port:
        updates["port"] = args.port
    if args.db:
        updates["db"] = args.db
    # Agents must present a token: this one, else the one the cluster made on its first start.
    if settings.agent_token is None and os.environ.get(AGENT_TOKEN_ENV):
        updates["agent_token"] = os.environ[AGENT_TOKEN_ENV]
    if updates:
        settings = settings.model_copy(update=updates)
    home = args.home or settings.assay_home or Path(os.environ.get("ASSAY_HOME", "~/.assay"))
    home = home.expanduser().resolve()
    try:
        # It holds the database and the agent token: its owner's only, when it is made here.
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot make the master's home {home}: {exc.strerror}", file=sys.stderr)
        return 1
    run_master(settings, home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
