"""Checkpoints in an object store (S3, Google Cloud Storage, Azure Blob Storage).

The three share one layout and one set of rules, kept here; each service only supplies a small
:class:`ObjectClient` that moves bytes. Checkpoint ``uuid`` is the objects under
``<prefix><uuid>/`` plus a manifest ``<prefix>.assay-manifests/<uuid>.json`` that lists every file
(with its size) and directory. The manifest is written last, only once every file is stored and
its size checked, and readers trust nothing but the manifest: a uuid without one is absent, so
a checkpoint appears all at once and a crashed upload leaves nothing a reader can see.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from assay.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    PartlyDeleted,
    StorageError,
    one_line,
)
from assay.storage._base import Progress, check_uuid
from assay.storage._files import check_key
from assay.storage._reach import Endpoint

log = logging.getLogger("assay.storage")

MANIFESTS = ".assay-manifests"
"""The folder (under the prefix) of the manifests; no checkpoint uuid starts with a dot."""

_FORMAT = 1
_TRANSFER_THREADS = 8


class ObjectClient(Protocol):
    """What a storage service must do for :class:`ObjectStorage`. Every method raises
    :class:`~assay.errors.StorageError` (with one detail naming the config key at fault, when
    one is) for anything but the outcomes it returns."""

    def describe(self) -> str:
        """Where the objects are, for messages: ``s3 bucket 'b' at http://host:9000``."""
        ...

    def upload_file(self, path: Path, key: str, progress: Progress | None) -> None: ...

    def download_file(self, key: str, path: Path, size: int, progress: Progress | None) -> None:
        """Write object ``key`` (of ``size`` bytes, as far as the manifest knows) to ``path``,
        replacing any file there."""
        ...

    def put_bytes(self, key: str, data: bytes, *, only_if_absent: bool) -> bool:
        """Store ``data`` at ``key``; ``False`` (nothing written) when ``only_if_absent`` and
        the key already exists."""
        ...

    def get_bytes(self, key: str) -> bytes | None:
        """The object's content, or ``None`` when there is no such object."""
        ...

    def exists(self, key: str) -> bool: ...

    def list_sizes(self, prefix: str) -> dict[str, int]:
        """Every key starting with ``prefix``, with its size in bytes."""
        ...

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Delete these objects; a key that is already gone is no error."""
        ...

    def quick(self, timeout: float) -> ObjectClient:
        """The same client with short timeouts and no retries, for a probe; its errors never
        quote what the server answered."""
        ...

    def endpoint(self) -> Endpoint | None:
        """The server the config chose (and its key), without contacting it; None for the
        cloud service's own."""
        ...


@dataclass(frozen=True)
class _File:
    rel: str
    path: Path
    size: int


class ObjectStorage:
    """A :class:`~assay.storage.StorageManager` over an :class:`ObjectClient`."""

    kind: ClassVar[str] = "object"

    def __init__(self, client: ObjectClient, prefix: str | None = None) -> None:
        self.client = client
        cleaned = (prefix or "").strip("/")
        self.prefix = f"{cleaned}/" if cleaned else ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.client.describe()!r}, prefix={self.prefix!r})"

    # -- the protocol -----------------------------------------------------------------------

    @contextmanager
    def store_path(self, uuid: str) -> Iterator[Path]:
        check_uuid(uuid)
        # Refused before the caller spends time writing; checked again when committing.
        self._refuse_existing(uuid)
        with tempfile.TemporaryDirectory(prefix=f"assay-checkpoint-{uuid}-") as scratch:
            yield Path(scratch)
            self._commit(Path(scratch), uuid, None)

    def upload(self, src: Path, uuid: str, *, progress: Progress | None = None) -> None:
        check_uuid(uuid)
        if not src.is_dir():
            raise InvalidRequest(
                f"cannot upload {src} as checkpoint {uuid}: it is not a directory; pass the "
                "directory the checkpoint was written to"
            )
        self._refuse_existing(uuid)
        self._commit(src, uuid, progress)

    def download(self, uuid: str, dst: Path, *, progress: Progress | None = None) -> None:
        listing = self._manifest(uuid)
        files = [rel for rel in listing if not rel.endswith("/")]
        dst.mkdir(parents=True, exist_ok=True)
        for rel in listing:
            if rel.endswith("/"):
                (dst / rel).mkdir(parents=True, exist_ok=True)

        def fetch(rel: str) -> None:
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self.client.download_file(self._key(uuid, rel), target, listing[rel], progress)
            got = target.stat().st_size
            if got != listing[rel]:
                raise StorageError(
                    f"checkpoint {uuid} in {self.client.describe()}: {rel} arrived with {got} "
                    f"bytes, its manifest says {listing[rel]}; the object was changed or cut short"
                )

        _each(fetch, files)

    @contextmanager
    def restore_path(self, uuid: str) -> Iterator[Path]:
        check_uuid(uuid)
        with tempfile.TemporaryDirectory(prefix=f"assay-restore-{uuid}-") as scratch:
            self.download(uuid, Path(scratch))
            yield Path(scratch)

    def delete(self, uuid: str) -> None:
        manifest_key = self._manifest_key(check_uuid(uuid))
        body = self.client.get_bytes(manifest_key)
        if body is None:
            raise self._not_found(uuid)
        listing = self.client.list_sizes(self._dir(uuid))
        # The manifest goes first so the checkpoint vanishes at once, however long the rest takes.
        self.client.delete_keys([manifest_key])
        try:
            self.client.delete_keys(sorted(listing))
        except BaseException as exc:
            # Put the manifest back: the checkpoint's row must still point at what is left, so
            # a later deletion removes it rather than leaving objects nobody knows about.
            try:
                self.client.put_bytes(manifest_key, body, only_if_absent=False)
            except Exception:
                log.exception("could not restore the manifest of checkpoint %s", uuid)
            if isinstance(exc, Exception) and self._left(uuid) != listing:
                raise PartlyDeleted(
                    f"{self.client.describe()}: some objects of checkpoint {uuid} may have been "
                    f"deleted before deletion failed: {one_line(exc)}"
                ) from exc
            raise

    def _left(self, uuid: str) -> dict[str, int] | None:
        """The checkpoint's objects now, or None when they cannot be listed."""
        try:
            return self.client.list_sizes(self._dir(uuid))
        except Exception:
            return None

    def list_files(self, uuid: str) -> dict[str, int]:
        return dict(sorted(self._manifest(uuid).items()))

    def exists(self, uuid: str) -> bool:
        return self.client.exists(self._manifest_key(check_uuid(uuid)))

    # -- TensorBoard's files (FileStore) ----------------------------------------------------

    def put_file(self, src: Path, key: str, *, append_from: int = 0) -> None:
        """Upload the whole file: an object cannot grow in place, so ``append_from`` is moot."""
        self.client.upload_file(src, self.prefix + check_key(key), None)

    def list_keys(self, prefix: str) -> dict[str, int]:
        base = self.prefix + check_key(prefix).rstrip("/") + "/"
        found = self.client.list_sizes(base)
        return {k[len(self.prefix) :]: size for k, size in sorted(found.items())}

    def get_file(self, key: str, dst: Path, size: int) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        self.client.download_file(self.prefix + check_key(key), dst, size, None)

    def delete_prefix(self, prefix: str) -> None:
        keys = list(self.client.list_sizes(self.prefix + check_key(prefix).rstrip("/") + "/"))
        if keys:
            self.client.delete_keys(keys)

    def local_path(self, key: str) -> Path | None:
        check_key(key)
        return None

    # -- the submission-time check ----------------------------------------------------------

    def endpoint(self) -> Endpoint | None:
        """The server the config chose; None for the cloud service's own."""
        return self.client.endpoint()

    def probe(self, timeout: float) -> None:
        """Write and delete a small object, with short timeouts: the credentials work and the
        bucket is there and writable. Raises :class:`~assay.errors.StorageError`."""
        client = self.client.quick(timeout)
        key = f"{self.prefix}{MANIFESTS}/probe-{secrets.token_hex(8)}"
        client.put_bytes(
            key, b"written by assay to check this storage; safe to delete\n", only_if_absent=False
        )
        client.delete_keys([key])

    # -- internals --------------------------------------------------------------------------

    def _dir(self, uuid: str) -> str:
        return f"{self.prefix}{uuid}/"

    def _key(self, uuid: str, rel: str) -> str:
        return f"{self.prefix}{uuid}/{rel}"

    def _manifest_key(self, uuid: str) -> str:
        return f"{self.prefix}{MANIFESTS}/{uuid}.json"

    def _commit(self, src: Path, uuid: str, progress: Progress | None) -> None:
        listing, files = _scan(src)
        try:
            _each(
                lambda f: self.client.upload_file(f.path, self._key(uuid, f.rel), progress), files
            )
            stored = self.client.list_sizes(self._dir(uuid))
            for f in files:
                got = stored.get(self._key(uuid, f.rel))
                if got != f.size:
                    raise StorageError(
                        f"checkpoint {uuid} in {self.client.describe()}: {f.rel} was stored with "
                        f"{'no' if got is None else got} bytes, expected {f.size}"
                    )
            body = json.dumps({"format": _FORMAT, "files": listing}, sort_keys=True).encode()
            written = self.client.put_bytes(self._manifest_key(uuid), body, only_if_absent=True)
        except BaseException:
            self._discard(uuid, files)
            raise
        if not written:
            # Another writer committed this uuid meanwhile; the objects may be theirs now.
            raise self._conflict(uuid)

    def _discard(self, uuid: str, files: list[_File]) -> None:
        try:
            self.client.delete_keys([self._key(uuid, f.rel) for f in files])
        except Exception:
            # Invisible without a manifest; a later delete of the uuid removes them.
            log.warning("could not remove the objects of failed checkpoint %s", uuid)

    def _manifest(self, uuid: str) -> dict[str, int]:
        body = self.client.get_bytes(self._manifest_key(check_uuid(uuid)))
        if body is None:
            raise self._not_found(uuid)
        try:
            parsed: Any = json.loads(body)
            listing = parsed["files"]
            if not isinstance(listing, dict):
                raise TypeError("files is not a mapping")
            return {_safe_rel(str(rel)): int(size) for rel, size in listing.items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(
                f"checkpoint {uuid} in {self.client.describe()} has an unreadable manifest "
                f"({self._manifest_key(uuid)}): {exc}"
            ) from None

    def _refuse_existing(self, uuid: str) -> None:
        if self.client.exists(self._manifest_key(uuid)):
            raise self._conflict(uuid)

    def _not_found(self, uuid: str) -> NotFound:
        return NotFound(f"checkpoint {uuid} not found in {self._where()}")

    def _conflict(self, uuid: str) -> Conflict:
        return Conflict(
            f"checkpoint {uuid} already exists in {self._where()}; checkpoints are immutable, "
            "store under a new uuid"
        )

    def _where(self) -> str:
        where = self.client.describe()
        return f"{where} under prefix {self.prefix!r}" if self.prefix else where


def _scan(src: Path) -> tuple[dict[str, int], list[_File]]:
    """The listing of ``src`` (directories as ``name/``) and its files. Links are followed, as
    the file-system storages' uploads do, so the checkpoint holds what they point to."""
    listing: dict[str, int] = {}
    files: list[_File] = []
    for current, dirs, names in os.walk(src, followlinks=True):
        rel_dir = Path(current).relative_to(src).as_posix()
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        for name in dirs:
            listing[f"{prefix}{name}/"] = 0
        for name in names:
            path = Path(current, name)
            size = path.stat().st_size
            listing[f"{prefix}{name}"] = size
            files.append(_File(f"{prefix}{name}", path, size))
    return dict(sorted(listing.items())), files


def write_replacing(path: Path, chunks: Iterable[bytes], progress: Progress | None) -> None:
    """Stream ``chunks`` into ``path``: into a temporary file beside it, renamed over it once
    complete, so a failed transfer leaves no partial file under the name."""
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                if progress is not None:
                    progress(len(chunk))
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def _safe_rel(rel: str) -> str:
    """``rel`` if it stays inside the checkpoint; a manifest is data from the bucket, which
    others may write to."""
    parts = rel.rstrip("/").split("/")
    if posixpath.isabs(rel) or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"path {rel!r} leaves the checkpoint")
    return rel


def _each(fn: Callable[[Any], None], items: Sequence[Any]) -> None:
    """``fn`` over ``items`` on a few threads; the first failure is raised once all stop."""
    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=min(_TRANSFER_THREADS, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
    errors = [exc for f in futures if (exc := f.exception()) is not None]
    if errors:
        raise errors[0]
