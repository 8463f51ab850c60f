"""``ctx.checkpoint``: save and load checkpoints, registered with the master.

In a distributed trial (as in Determined) ``store_path(metadata)`` and ``upload(dir, metadata)``
belong to the chief: on any other rank they raise, so a worker never writes a second copy of the
model; guard them with ``if ctx.distributed.rank == 0``. With ``shard=True`` they are collectives
instead: every rank must call them, each writes its own part into its own directory, and the
chief commits the union as one checkpoint (files travel to the chief over the ranks'
connections, so shards are meant to be modest; two ranks writing the same file is an error).
Reading (``restore_path``, ``download``) works on every rank on its own, and on any machine
that reaches the master: where the storage does not hold the checkpoint (a ``shared_fs``
directory not mounted here, a bucket this machine has no credentials for), the checkpoint is
downloaded through the master with the trial's token.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core._distributed import DistributedContext
from assay.core._relay import Relayed
from assay.core._session import MasterSession
from assay.core._unwritable import telling_why
from assay.protocol import CheckpointReport

if TYPE_CHECKING:
    import tempfile

    from assay.storage import StorageManager

log = logging.getLogger("assay.core")


def _new_uuid() -> str:
    # Imported here: uuid and tempfile cost every trial's start-up, most never checkpoint.
    import uuid

    return str(uuid.uuid4())


def _tempdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    import tempfile

    return tempfile.TemporaryDirectory(prefix=prefix)


DOWNLOAD_RETRY_DEADLINE = 120.0
"""How long a download through the master is retried while the master is away or the transfer
breaks off (each try starts afresh, and a failed one leaves nothing behind)."""


def _storage(config: dict[str, Any]) -> StorageManager:
    # Imported on first use: most trials checkpoint long after they start.
    from assay.storage import storage_from_config

    return storage_from_config(config)


class CheckpointContext:
    """Checkpoints are directories identified by a uuid. ``metadata`` must say
    ``steps_completed``: it is what a resumed trial continues from."""

    def __init__(
        self,
        session: MasterSession | None,
        trial_id: int | None,
        storage_config: dict[str, Any],
        on_report: Any = None,
        distributed: DistributedContext | None = None,
    ) -> None:
        self._session = session
        self._trial_id = trial_id
        self._storage_config = storage_config
        self._manager: StorageManager | None = None
        self._on_report = on_report
        self._dist = distributed or DistributedContext()

    @property
    def storage(self) -> StorageManager:
        if self._manager is None:
            self._manager = _storage(self._storage_config)
        return self._manager

    def _writing(self) -> contextlib.AbstractContextManager[None]:
        """Around a write to storage: a full disk, a used-up quota, a read-only or forbidden
        directory there is said in one line naming the storage (the trial's failure line)."""
        base = getattr(self.storage, "base", None)
        return telling_why(base if isinstance(base, Path) else None)

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any], shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """A directory to write a checkpoint into, and its uuid. On a clean exit the checkpoint
        is committed to storage and registered with the master before this returns.

        Only the chief may call it, unless ``shard=True``: then every rank must, together."""
        if shard:
            with self._store_sharded(metadata) as found:
                yield found
            return
        self._chief_only("store_path")
        steps = _steps(metadata)
        storage_id = _new_uuid()
        # The training code's own writes into the directory too: they are what fills a disk.
        with self._writing(), self.storage.store_path(storage_id) as path:
            yield path, storage_id
        self._report(storage_id, steps, metadata)

    def upload(
        self, ckpt_dir: str | Path | None, metadata: dict[str, Any], *, shard: bool = False
    ) -> str:
        """Store the directory ``ckpt_dir`` as a new checkpoint; its uuid. Only the chief may
        call it, unless ``shard=True``: then every rank must, each with its own directory (or
        None when it has nothing to add)."""
        if shard:
            storage_id = self._dist.broadcast(_new_uuid())
            self._commit_shards(Path(ckpt_dir) if ckpt_dir else None, storage_id, metadata)
            return storage_id
        self._chief_only("upload")
        if ckpt_dir is None:
            raise ValueError("upload() needs the directory to store (ckpt_dir)")
        steps = _steps(metadata)
        storage_id = _new_uuid()
        with self._writing():
            self.storage.upload(Path(ckpt_dir), storage_id)
        self._report(storage_id, steps, metadata)
        return storage_id

    def _chief_only(self, what: str) -> None:
        if self._dist.rank != 0:
            raise RuntimeError(
                f"cannot call checkpoint.{what}(shard=False) on rank {self._dist.rank}: only the "
                f"chief (rank 0) stores checkpoints; call it under `if "
                f"ctx.distributed.rank == 0`, or pass shard=True on every rank"
            )

    @contextlib.contextmanager
    def _store_sharded(self, metadata: dict[str, Any]) -> Iterator[tuple[Path, str]]:
        storage_id = self._dist.broadcast(_new_uuid())
        with _tempdir(prefix="assay-shard-") as tmp:
            yield Path(tmp), storage_id
            self._commit_shards(Path(tmp), storage_id, metadata)

    def _commit_shards(
        self, ckpt_dir: Path | None, storage_id: str, metadata: dict[str, Any]
    ) -> None:
        parts = self._dist.gather((_read_tree(ckpt_dir) if ckpt_dir else {}, metadata))
        problem: str | None = None
        error: Exception | None = None
        if parts is not None:
            try:
                problem = self._merge_and_store(parts, storage_id)
            except Exception as exc:
                problem, error = f"the chief could not store sharded checkpoint: {exc}", exc
        # Every rank learns the outcome, so a failure raises everywhere, not on the chief alone.
        problem = self._dist.broadcast(problem)
        if error is not None:
            raise error
        if problem:
            raise RuntimeError(problem)

    def _merge_and_store(
        self, parts: list[tuple[dict[str, bytes], dict[str, Any]]], storage_id: str
    ) -> str | None:
        files: dict[str, bytes] = {}
        owners: dict[str, list[int]] = {}
        merged: dict[str, Any] = {}
        clashes: list[str] = []
        for rank, (tree, meta) in enumerate(parts):
            for name, data in tree.items():
                owners.setdefault(name, []).append(rank)
                files[name] = data
            for key, value in (meta or {}).items():
                if key in merged and merged[key] != value:
                    clashes.append(f"metadata {key!r}: {merged[key]!r} vs {value!r}")
                merged.setdefault(key, value)
        clashes += [
            f"{name} written by ranks {ranks}"
            for name, ranks in sorted(owners.items())
            if len(ranks) > 1 and not name.endswith("/")
        ]
        if clashes:
            return "refusing to store a sharded checkpoint with conflicts: " + "; ".join(clashes)
        steps = _steps(merged)
        with self._writing(), self.storage.store_path(storage_id) as path:
            for name, data in sorted(files.items()):
                target = path / name
                if name.endswith("/"):
                    target.mkdir(parents=True, exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
        self._report(storage_id, steps, merged)
        return None

    def download(self, storage_id: str, ckpt_dir: str | Path, download_mode: Any = None) -> None:
        """Copy the checkpoint into the directory ``ckpt_dir`` (created if missing)."""
        del download_mode
        if self._held_here(storage_id):
            self.storage.download(storage_id, Path(ckpt_dir))
        else:
            self._through_master(storage_id, Path(ckpt_dir))

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, download_mode: Any = None) -> Iterator[Path]:
        """The checkpoint's directory, for reading. Every rank may call it, each on its own
        (``download_mode`` is accepted for compatibility with Determined)."""
        del download_mode
        if self._held_here(storage_id):
            with self.storage.restore_path(storage_id) as path:
                yield path
            return
        with _tempdir(prefix="assay-restore-") as tmp:
            path = Path(tmp, storage_id)
            self._through_master(storage_id, path)
            yield path

    def _held_here(self, storage_id: str) -> bool:
        """Whether this machine reads the checkpoint from storage itself; off-cluster there is
        no master to ask, so it always does."""
        if self._session is None:
            return True
        try:
            return self.storage.exists(storage_id)
        except Exception as exc:  # any storage's failure to answer here: the master may
            log.info("checkpoint storage not usable on this machine (%s)", exc)
            return False

    def _through_master(self, storage_id: str, dest: Path) -> None:
        from assay.client import download_checkpoint

        assert self._session is not None
        log.info(
            "checkpoint %s is not in reach of this machine's storage; downloading it through "
            "the master",
            storage_id,
        )
        self._session.call(
            lambda h: download_checkpoint(h, storage_id, dest), deadline=DOWNLOAD_RETRY_DEADLINE
        )

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        if self._session is None:
            return {}
        answer = self._session.call(lambda h: h.get(f"/api/v1/checkpoints/{storage_id}"))
        return dict(answer.get("metadata") or {})

    def delete(self, storage_id: str) -> None:
        self.storage.delete(storage_id)

    def _report(self, storage_id: str, steps: int, metadata: dict[str, Any]) -> None:
        resources = self.storage.list_files(storage_id)
        if self._session is None:
            log.info("checkpoint %s at step %d saved", storage_id, steps)
            return
        if self._on_report is not None:
            self._on_report()
        body = CheckpointReport(storage_id, steps, metadata, resources).to_dict()
        # Through the agent while it relays: with a large cluster's other trials', so its
        # master is not sent a request and a transaction per checkpoint. A line of its own
        # (a local socket) per registration, whatever thread registers.
        relayed, trial_id = Relayed(self._session.token), self._trial_id or 0
        try:
            self._session.call(
                lambda h: relayed.post(h, "/api/v1/checkpoints", body, trial_id, checkpoint=body)
            )
        finally:
            relayed.close()


def _steps(metadata: dict[str, Any]) -> int:
    steps = metadata.get("steps_completed") if isinstance(metadata, dict) else None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(
            "checkpoint metadata must include steps_completed (an int >= 0), e.g. "
            "{'steps_completed': 500}: a resumed trial continues from it"
        )
    return steps


def _read_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative ``/``-separated path; directories as ``name/``."""
    tree: dict[str, bytes] = {}
    for current, dirs, names in os.walk(root):
        rel = Path(current).relative_to(root).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        for name in dirs:
            tree[f"{prefix}{name}/"] = b""
        for name in names:
            tree[f"{prefix}{name}"] = Path(current, name).read_bytes()
    return tree
