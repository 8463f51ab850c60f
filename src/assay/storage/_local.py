"""Checkpoints as directories on a local or shared file system: ``base/<uuid>/``."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from assay.errors import Conflict, InvalidRequest, NotFound, PartlyDeleted
from assay.storage._base import Progress, check_uuid, list_directory
from assay.storage._files import LocalFiles


class SharedFSStorage(LocalFiles):
    """Checkpoint storage in a directory every machine sees at the same path (Determined's
    ``shared_fs``): checkpoint ``uuid`` is the directory ``base/<uuid>/``.

    Writes go to a dot-named sibling of the final directory and are renamed into place, which
    is atomic on one file system, so readers never see half a checkpoint. ``base`` is created
    on the first write. Keyed files (:class:`~assay.storage.FileStore`, TensorBoard's) live
    beside the checkpoints, as ``base/<key>``.
    """

    kind: ClassVar[str] = "shared_fs"

    def __init__(self, base: Path) -> None:
        self.base = Path(base)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.base)!r})"

    @contextmanager
    def store_path(self, uuid: str) -> Iterator[Path]:
        check_uuid(uuid)
        self._refuse_existing(uuid)
        staging = self._staging(uuid)
        try:
            yield staging
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._commit(staging, uuid)

    def upload(self, src: Path, uuid: str, *, progress: Progress | None = None) -> None:
        check_uuid(uuid)
        if not src.is_dir():
            raise InvalidRequest(
                f"cannot upload {src} as checkpoint {uuid}: it is not a directory; pass the "
                "directory the checkpoint was written to"
            )
        with self.store_path(uuid) as staging:
            # Links are followed so the stored checkpoint does not depend on anything outside it.
            shutil.copytree(src, staging, dirs_exist_ok=True, copy_function=_copier(progress))

    def download(self, uuid: str, dst: Path, *, progress: Progress | None = None) -> None:
        source = self._existing(uuid)
        shutil.copytree(
            source, dst, symlinks=True, dirs_exist_ok=True, copy_function=_copier(progress)
        )

    @contextmanager
    def restore_path(self, uuid: str) -> Iterator[Path]:
        yield self._existing(uuid)

    def delete(self, uuid: str) -> None:
        source = self._existing(uuid)
        doomed = self.base / f".deleting-{uuid}-{secrets.token_hex(6)}"
        try:
            # Renamed away first so the uuid vanishes at once even if removal is slow or fails.
            os.rename(source, doomed)
        except FileNotFoundError:
            raise self._not_found(uuid) from None
        listing = list_directory(doomed)
        try:
            shutil.rmtree(doomed)
        except OSError as exc:
            # Put back what is left, so its row still points at files and none lie unknown.
            os.rename(doomed, source)
            if list_directory(source) != listing:
                raise PartlyDeleted(
                    f"some files of checkpoint {uuid} in {self.base} were deleted before "
                    f"deletion failed: {exc}"
                ) from exc
            raise

    def list_files(self, uuid: str) -> dict[str, int]:
        return list_directory(self._existing(uuid))

    def exists(self, uuid: str) -> bool:
        # A link in a checkpoint's place is there (and refused by every other method).
        return os.path.lexists(self.base / check_uuid(uuid))

    # -- internals --------------------------------------------------------------------------

    def _existing(self, uuid: str) -> Path:
        """The checkpoint's own directory. A link in its place (trial code writes this
        storage) is never followed: it would lead whoever reads or deletes the checkpoint,
        with their own rights, wherever it points."""
        path = self.base / check_uuid(uuid)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise self._not_found(uuid) from None
        if stat.S_ISLNK(mode):
            raise Conflict(
                f"checkpoint {uuid} in {self.kind} storage at {self.base} is a link, not a "
                "directory of its own; links there are never followed"
            )
        if not stat.S_ISDIR(mode):
            raise self._not_found(uuid)
        return path

    def _not_found(self, uuid: str) -> NotFound:
        return NotFound(f"checkpoint {uuid} not found in {self.kind} storage at {self.base}")

    def _conflict(self, uuid: str) -> Conflict:
        return Conflict(
            f"checkpoint {uuid} already exists in {self.kind} storage at {self.base}; "
            "checkpoints are immutable, store under a new uuid"
        )

    def _refuse_existing(self, uuid: str) -> None:
        if (self.base / uuid).exists():
            raise self._conflict(uuid)

    def _staging(self, uuid: str) -> Path:
        self.base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".writing-{uuid}-", dir=self.base))
        # mkdtemp makes it private (0700); a checkpoint on shared storage must be readable by
        # the master and other agents once committed.
        staging.chmod(0o755)
        return staging

    def _commit(self, staging: Path, uuid: str) -> None:
        target = self.base / uuid
        try:
            if target.exists():
                raise self._conflict(uuid)
            # rename would silently replace an empty directory created in the instant since
            # the check above; only two writers racing on one fresh uuid could hit that.
            os.rename(staging, target)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise self._conflict(uuid) from None
            raise
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _copier(progress: Progress | None) -> Callable[[str, str], object]:
    """shutil's file copy, telling ``progress`` each file's size once it is copied."""
    if progress is None:
        return shutil.copy2

    def copy(src: str, dst: str) -> object:
        done = shutil.copy2(src, dst)
        progress(os.stat(dst).st_size)
        return done

    return copy


class DirectoryStorage(SharedFSStorage):
    """Determined's ``directory`` checkpoint storage: a directory at the same path on every
    machine (``container_path``), with the same semantics as :class:`SharedFSStorage`."""

    kind: ClassVar[str] = "directory"

    def __init__(self, container_path: Path) -> None:
        super().__init__(container_path)
