"""``python -m assay.api``: the master process (what ``assay master`` and ``assay up`` start)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from assay.api._logformat import LOG_FORMATS, configure_logging
from assay.api._server import run_master
from assay.config import MasterConfig, load_master_config, validate_as
from assay.errors import AssayError, InvalidConfig
from assay.master import Master, database_url
from assay.protocol import AGENT_TOKEN_ENV, enable_trace_from_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay master", description="Run the assay master.")
    parser.add_argument("--config", type=Path, help="master.yaml (resource pools, storage...)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8080)")
    parser.add_argument("--db", help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db")
    parser.add_argument(
        "--home", type=Path, help="state directory (default $ASSAY_HOME or ~/.assay)"
    )
    parser.add_argument("--tls-cert", type=Path, help="serve https with this certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, help="the certificate's private key (PEM)")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name requests may use besides the loopback ones (repeatable; * for any)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="the log's lines: text (default) or json (one object a line)",
    )
    parser.add_argument(
        "--check-upgrade",
        action="store_true",
        help="say what a start would migrate in the database, change nothing, and exit",
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    enable_trace_from_env()
    try:
        settings = _with_flags(load_master_config(args.config), args)
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    home = args.home or settings.assay_home or Path(os.environ.get("ASSAY_HOME", "~/.assay"))
    home = home.expanduser().resolve()
    try:
        if args.check_upgrade:
            print(check_upgrade(settings, home))
            return 0
        run_master(settings, home)
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def check_upgrade(settings: MasterConfig, home: Path) -> str:
    """What ``--check-upgrade`` prints: the database's schema and what a start would apply."""
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its notes on reading the version
    plan = Master.upgrade_plan(settings, home)
    where = database_url(settings, home)
    if plan.current is None:
        return f"{where}: no assay database yet; a start creates one (schema {plan.newest})"
    if not plan.pending:
        return f"{where}: schema {plan.current}, the newest; a start migrates nothing"
    head = (
        f"{where}: schema {plan.current}; a start would apply {len(plan.pending)} "
        f"migration(s) to reach {plan.newest} (back it up first: assay master backup FILE)"
    )
    return "\n".join([head, *(f"  {m.revision}  {m.summary}" for m in plan.pending)])


def _with_flags(settings: MasterConfig, args: argparse.Namespace) -> MasterConfig:
    """``settings`` with what the command line gives in place of the config's values."""
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
    # Checked as the config file's keys are, so that a flag's value gets the same checks.
    flags: dict[str, object] = {}
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            given, missing = ("--tls-cert", "--tls-key")[:: 1 if args.tls_cert else -1]
            raise InvalidConfig(f"{given} needs {missing} too: TLS takes a certificate and its key")
        flags["tls"] = {"cert": str(args.tls_cert), "key": str(args.tls_key)}
    if args.allowed_host:
        flags["allowed_hosts"] = args.allowed_host
    if flags:
        checked: MasterConfig = validate_as(MasterConfig, flags, what="command-line flags")
        if args.tls_cert:
            updates["tls"] = checked.tls
        if args.allowed_host:
            updates["allowed_hosts"] = [*settings.allowed_hosts, *checked.allowed_hosts]
    return settings.model_copy(update=updates) if updates else settings


if __name__ == "__main__":
    sys.exit(main())
