"""``ctx.checkpoint``: save and load checkpoints, registered with the master."""

from __future__ import annotations

import contextlib
import logging
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core._session import MasterSession

if TYPE_CHECKING:
    from assay.storage import StorageManager

log = logging.getLogger("assay.core")


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
    ) -> None:
        self._session = session
        self._trial_id = trial_id
        self._storage_config = storage_config
        self._manager: StorageManager | None = None
        self._on_report = on_report

    @property
    def storage(self) -> StorageManager:
        if self._manager is None:
            self._manager = _storage(self._storage_config)
        return self._manager

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any], shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """A directory to write a checkpoint into, and its uuid. On a clean exit the checkpoint
        is committed to storage and registered with the master before this returns."""
        del shard
        steps = _steps(metadata)
        storage_id = str(uuidlib.uuid4())
        with self.storage.store_path(storage_id) as path:
            yield path, storage_id
        self._report(storage_id, steps, metadata)

    def upload(self, ckpt_dir: str | Path, metadata: dict[str, Any], *, shard: bool = False) -> str:
        del shard
        steps = _steps(metadata)
        storage_id = str(uuidlib.uuid4())
        self.storage.upload(Path(ckpt_dir), storage_id)
        self._report(storage_id, steps, metadata)
        return storage_id

    def download(self, storage_id: str, ckpt_dir: str | Path) -> None:
        self.storage.download(storage_id, Path(ckpt_dir))

    @contextlib.contextmanager
    def restore_path(self, storage_id: str) -> Iterator[Path]:
        with self.storage.restore_path(storage_id) as path:
            yield path

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
        body = {
            "uuid": storage_id,
            "steps_completed": steps,
            "metadata": metadata,
            "resources": resources,
        }
        self._session.call(lambda h: h.post("/api/v1/checkpoints", body))


def _steps(metadata: dict[str, Any]) -> int:
    steps = metadata.get("steps_completed") if isinstance(metadata, dict) else None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(
            "checkpoint metadata must include steps_completed (an int >= 0), e.g. "
            "{'steps_completed': 500}: a resumed trial continues from it"
        )
    return steps
