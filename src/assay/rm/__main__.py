"""``python -m assay.rm``: run one allocation's start where a Slurm job or a pod put it
(:mod:`assay.rm._step`). Its own module, so the package is imported once, not run twice."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from assay.protocol import AGENT_TOKEN_ENV, Start
from assay.rm._step import ADDRESS_ENV, START_ENV, run_step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assay.rm", description=__doc__)
    parser.add_argument("--start", help=f"the start's JSON file (default: ${START_ENV})")
    parser.add_argument("--events", help="append the events here (default: stdout)")
    parser.add_argument("--master", required=True, help="where the master is")
    parser.add_argument("--work-root", required=True, type=Path)
    parser.add_argument("--token-file", type=Path, help=f"the agent token (or ${AGENT_TOKEN_ENV})")
    parser.add_argument("--kill-grace", type=float, default=10.0)
    args = parser.parse_args(argv)
    raw = Path(args.start).read_text() if args.start else os.environ.get(START_ENV, "")
    message = Start.from_dict(json.loads(raw))
    token = (
        args.token_file.read_text().strip()
        if args.token_file
        else os.environ.pop(AGENT_TOKEN_ENV, None)
    )
    out = open(args.events, "a", encoding="utf-8") if args.events else sys.stdout  # noqa: SIM115
    try:
        return asyncio.run(
            run_step(
                message,
                master_url=args.master,
                work_root=args.work_root,
                token=token,
                events=out,
                kill_grace=args.kill_grace,
                address=os.environ.get(ADDRESS_ENV, ""),
            )
        )
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
