"""A trial's TensorBoard directory, copied to checkpoint storage as its files appear.

Training code writes event files into ``ctx.train.get_tensorboard_path()`` (AdaptDL's code into
``ADAPTDL_TENSORBOARD_LOGDIR``, the same directory); a background thread of the chief copies
new and grown files to the storage's ``tensorboard/<experiment>/<trial>/`` every few seconds,
and everything once more when the context closes, so the files outlive the trial and
``assay tensorboard start`` can read them from the storage.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.storage import FileStore

log = logging.getLogger("assay.core")

SYNC_SECONDS = 5.0
"""How often the uploader looks for new and grown files."""


@dataclass(frozen=True)
class _Seen:
    inode: int
    size: int
    mtime_ns: int


class TensorBoardUploader:
    """Copies every file under ``local_dir`` to ``store`` under ``prefix``: on :meth:`sync`,
    every ``interval`` seconds once :meth:`start` has run, and at :meth:`close`."""

    def __init__(
        self, local_dir: Path, store: FileStore, prefix: str, interval: float = SYNC_SECONDS
    ) -> None:
        self.local_dir = local_dir
        self.store = store
        self.prefix = prefix.rstrip("/")
        self.interval = interval
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._loop, name="assay-tensorboard-upload", daemon=True
        )
        self._thread.start()

    def sync(self) -> int:
        """Copy what is new or changed since the last sync; how many files were copied."""
        with self._lock:
            copied = 0
            for rel, path, now in self._changed():
                before = self._seen.get(rel)
                # The same file, only longer: event files grow by appending records.
                grown_from = (
                    before.size
                    if before is not None and before.inode == now.inode and before.size < now.size
                    else 0
                )
                self.store.put_file(path, f"{self.prefix}/{rel}", append_from=grown_from)
                self._seen[rel] = now
                copied += 1
            return copied

    def close(self) -> None:
        """Stop the thread and copy everything not yet copied."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self.sync()
        except Exception as exc:  # the trial's result matters more than its plots
            log.warning("could not upload the TensorBoard files in %s: %s", self.local_dir, exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except Exception as exc:
                # Said once: a storage that is down now may be back by the next sync.
                if not self._warned:
                    self._warned = True
                    log.warning("uploading TensorBoard files failed (will retry): %s", exc)

    def _changed(self) -> list[tuple[str, Path, _Seen]]:
        out = []
        for current, dirs, files in os.walk(self.local_dir):
            # Dot-names are writers' scratch files (and no storage key may start with a dot).
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(f for f in files if not f.startswith(".")):
                path = Path(current, name)
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue  # removed since it was listed
                if not path.is_file():
                    continue
                rel = path.relative_to(self.local_dir).as_posix()
                now = _Seen(st.st_ino, st.st_size, st.st_mtime_ns)
                if self._seen.get(rel) != now:
                    out.append((rel, path, now))
        return out
