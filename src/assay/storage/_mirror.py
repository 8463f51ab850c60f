"""Keeping a local copy of trials' TensorBoard files from a storage that is not a file system.

``assay tensorboard start`` on an experiment whose checkpoint storage is an object store runs
this beside TensorBoard: it copies each trial's files (``tensorboard/<experiment>/<trial>/``)
into a local directory and keeps copying what is new or grew, so TensorBoard reads the store's
files as if they were local. The storage config comes in the environment variable
:data:`STORAGE_ENV` (a secret of the task: its credentials are never shown)::

    python -m assay.storage._mirror --into DIR [--once] TRIAL=PREFIX...
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from assay.storage._config import storage_from_config
from assay.storage._files import FileStore

STORAGE_ENV = "ASSAY_TENSORBOARD_STORAGE"
"""The environment variable holding the storage config (JSON)."""

SYNC_SECONDS = 2.0

log = logging.getLogger("assay.tensorboard.mirror")


def sync(store: FileStore, prefixes: dict[str, str], into: Path, seen: dict[str, int]) -> int:
    """Copy each key under ``prefixes`` (trial -> key prefix) whose size is not the one in
    ``seen`` to ``into/<trial>/<rest of the key>``; how many files were copied."""
    copied = 0
    for trial, prefix in prefixes.items():
        for key, size in store.list_keys(prefix).items():
            if seen.get(key) == size:
                continue
            rest = key[len(prefix) :].lstrip("/")
            store.get_file(key, into / trial / rest, size)
            seen[key] = size
            copied += 1
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assay.storage._mirror")
    parser.add_argument("--into", required=True, type=Path)
    parser.add_argument("--once", action="store_true", help="copy once, then exit")
    parser.add_argument("trials", nargs="+", metavar="TRIAL=PREFIX")
    args = parser.parse_args(argv)
    prefixes = dict(item.split("=", 1) for item in args.trials)
    store = storage_from_config(json.loads(os.environ[STORAGE_ENV]))
    if not isinstance(store, FileStore):
        print(f"assay: {type(store).__name__} keeps no TensorBoard files", file=sys.stderr)
        return 1
    seen: dict[str, int] = {}
    for trial in prefixes:
        (args.into / trial).mkdir(parents=True, exist_ok=True)
    while True:
        try:
            sync(store, prefixes, args.into, seen)
        except Exception as exc:  # a store that is briefly unreachable: try again
            if args.once:
                print(f"assay: could not copy TensorBoard files: {exc}", file=sys.stderr)
                return 1
            log.warning("copying TensorBoard files failed (will retry): %s", exc)
        if args.once:
            return 0
        time.sleep(SYNC_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
