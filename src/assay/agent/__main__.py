"""``python -m assay.agent``: the agent process (what ``assay agent`` and ``assay up`` start)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path

from assay.agent._daemon import Agent
from assay.agent._slots import detect_slots
from assay.client import master_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay agent", description="Run an assay agent.")
    parser.add_argument(
        "--master", help="master URL (default $ASSAY_MASTER or http://127.0.0.1:8080)"
    )
    parser.add_argument("--slots", type=int, help="CPU slots when there is no GPU (default: cores)")
    parser.add_argument("--pool", default="default", help="resource pool to join")
    parser.add_argument("--label", action="append", default=[], help="a label (repeatable)")
    parser.add_argument("--id", dest="agent_id", help="agent id (default: the host name)")
    parser.add_argument(
        "--home", type=Path, help="state directory (default $ASSAY_HOME or ~/.assay)"
    )
    parser.add_argument(
        "--address",
        help="address other agents reach this one at, for distributed trials (default: the "
        "address this agent's connection to the master comes from)",
    )
    parser.add_argument(
        "--token",
        help="the cluster's agent token, if its master requires one (default "
        "$ASSAY_AGENT_TOKEN, else the one `assay up` wrote in ASSAY_HOME)",
    )
    parser.add_argument("--kill-grace", type=float, default=10.0, help="SIGTERM to SIGKILL seconds")
    args = parser.parse_args(argv)
    if args.slots is not None and args.slots < 0:
        parser.error("--slots must be >= 0")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    home = (args.home or Path(os.environ.get("ASSAY_HOME", "~/.assay"))).expanduser().resolve()
    agent_id = args.agent_id or socket.gethostname()
    token = args.token or os.environ.get("ASSAY_AGENT_TOKEN") or _local_token(home)
    agent = Agent(
        agent_id=agent_id,
        master_url=master_url(args.master),
        slots=detect_slots(args.slots),
        pool=args.pool,
        labels=args.label,
        work_root=home / "agents" / agent_id,
        kill_grace=args.kill_grace,
        address=args.address,
        token=token,
    )
    asyncio.run(agent.run())
    if agent.refusal is not None:
        print(f"error: {agent.refusal}", file=sys.stderr)
        return 1
    return 0


def _local_token(home: Path) -> str | None:
    try:
        return (home / "run" / "agent-token").read_text().strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
