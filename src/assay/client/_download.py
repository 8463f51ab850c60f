"""Downloading a checkpoint through the master (``GET /api/v1/checkpoints/{uuid}/files``).

The tar is unpacked as it arrives, never held whole, into a fresh directory next to the
destination; only once every member was accepted and every size matches the checkpoint's
listing does it move into place, so a refused or broken download leaves nothing behind. What
the archive says is not trusted: absolute paths, ``..``, links, devices and anything but
files, directories and symbolic links staying inside are refused (the member names by the
rules here, the links and the rest by ``tarfile``'s ``data`` filter, which also sees the disk).

Standard library only: the harness downloads with this, and trial processes import neither
pydantic nor an HTTP library.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from assay import tarsafe
from assay.client._http import HttpSession, failure_reason
from assay.errors import AssayError, MasterUnreachable

Progress = Callable[[int, int], None]
"""Called with (bytes received so far, bytes of file data expected) as the download goes."""

TIMEOUT = 300.0
"""How long a download waits for the next bytes before it gives up."""


def files_path(uuid: str) -> str:
    return f"/api/v1/checkpoints/{urllib.parse.quote(uuid, safe='')}"


def listing(session: HttpSession, uuid: str) -> dict[str, int]:
    """The checkpoint's files and their sizes, as the master lists them."""
    answer = session.get(files_path(uuid))
    return {str(k): int(v) for k, v in (answer.get("resources") or {}).items()}


def download_checkpoint(
    session: HttpSession,
    uuid: str,
    dest: str | Path,
    *,
    path: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Download checkpoint ``uuid`` into the directory ``dest`` (created if missing; files of
    the same name there are replaced), or with ``path``, only that file or directory of it
    (kept at its place inside the checkpoint). Returns ``dest``."""
    dest = Path(dest)
    files = listing(session, uuid)
    if path is not None:
        wanted = "/".join(p for p in path.split("/") if p not in ("", "."))
        if wanted in files:
            _download_file(session, uuid, wanted, files[wanted], dest, progress)
            return dest
        files = {n: s for n, s in files.items() if n.startswith(f"{wanted}/")}
    total = sum(size for name, size in files.items() if not name.endswith("/"))
    params = {"path": path} if path is not None else None
    with _opened(session, f"{files_path(uuid)}/files", params) as response:
        extract_tar(
            response, dest, files, what=f"checkpoint {uuid}", total=total, progress=progress
        )
    return dest


@contextlib.contextmanager
def _opened(
    session: HttpSession, path: str, params: Mapping[str, Any] | None
) -> Iterator[http.client.HTTPResponse]:
    conn = session.open_connection(TIMEOUT)
    try:
        target = path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            conn.request("GET", target, headers=session.headers({"Accept": "*/*"}))
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise MasterUnreachable(
                f"no master answering at {session.base_url} ({failure_reason(exc)})"
            ) from exc
        if response.status >= 400:
            session.raise_for_error(response.status, response.read())
        yield response
    finally:
        conn.close()


def _download_file(
    session: HttpSession,
    uuid: str,
    name: str,
    size: int,
    dest: Path,
    progress: Progress | None,
) -> None:
    target = dest / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.downloading-", dir=target.parent)
    try:
        got = 0
        with (
            os.fdopen(fd, "wb") as out,
            _opened(session, f"{files_path(uuid)}/files", {"path": name}) as response,
        ):
            while piece := _read(response, session, 1024 * 1024):
                out.write(piece)
                got += len(piece)
                if progress is not None:
                    progress(min(got, size), size)
        if got != size:
            raise AssayError(
                f"{name} of checkpoint {uuid} arrived with {got} bytes, but it is listed with "
                f"{size}; nothing was written, download it again"
            )
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _read(response: http.client.HTTPResponse, session: HttpSession, n: int) -> bytes:
    try:
        return response.read(n)
    except (OSError, http.client.HTTPException) as exc:
        raise MasterUnreachable(
            f"the master at {session.base_url} stopped sending: {failure_reason(exc)}"
        ) from exc


class _Counted:
    """A readable stream reporting how much was read; its errors as :class:`AssayError`."""

    def __init__(self, raw: Any, total: int, progress: Progress | None) -> None:
        self.raw = raw
        self.total = total
        self.progress = progress
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        try:
            data: bytes = self.raw.read(n)
        except (OSError, http.client.HTTPException) as exc:
            raise AssayError(f"the download broke off: {failure_reason(exc)}") from exc
        self.count += len(data)
        if self.progress is not None:
            # Tar headers count too; the bar stops at the size of the files.
            self.progress(min(self.count, self.total), self.total)
        return data


def extract_tar(
    stream: Any,
    dest: Path,
    expected: Mapping[str, int],
    *,
    what: str,
    total: int = 0,
    progress: Progress | None = None,
) -> None:
    """Unpack the uncompressed tar read from ``stream`` into ``dest`` (see the module's doc);
    ``expected``: every path it must hold, as ``assay.storage.list_directory`` lists them."""
    dest = Path(os.path.abspath(dest))
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.downloading-", dir=dest.parent))
    got: dict[str, int] = {}
    try:
        try:
            counted: Any = _Counted(stream, total, progress)
            with tarfile.open(fileobj=counted, mode="r|") as tar:
                for member in tar:
                    _check_member(member, what)
                    tarsafe.extract(tar, member, str(staging))
                    got[_listed_name(member)] = _size_on_disk(staging, member)
        except tarsafe.REFUSED as exc:
            raise AssayError(f"{what}: refused an unsafe member: {exc}") from None
        except tarfile.TarError as exc:
            raise AssayError(
                f"{what} did not arrive as a whole tar ({exc}); nothing written"
            ) from None
        _verify(got, expected, what)
        _place(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_member(member: tarfile.TarInfo, what: str) -> None:
    name = member.name
    if name.startswith("/") or ".." in name.split("/"):
        raise AssayError(f"{what}: refused member {name!r}: it would land outside the directory")
    if not (member.isreg() or member.isdir() or member.issym()):
        raise AssayError(
            f"{what}: refused member {name!r}: only files, directories and symbolic links are "
            "accepted"
        )


def _listed_name(member: tarfile.TarInfo) -> str:
    """The member's name as a checkpoint's listing spells it (directories end in ``/``)."""
    name = "/".join(p for p in member.name.split("/") if p not in ("", "."))
    return f"{name}/" if member.isdir() else name


def _size_on_disk(root: Path, member: tarfile.TarInfo) -> int:
    """What the listing says of the member as it is now on disk: the size of a file or a
    link (as ``lstat`` gives it), 0 for a directory."""
    if member.isdir():
        return 0
    return os.lstat(root / member.name).st_size


def _verify(got: Mapping[str, int], expected: Mapping[str, int], what: str) -> None:
    for name, size in expected.items():
        if name not in got:
            raise AssayError(f"{what}: {name} is missing from the download; nothing was written")
        if got[name] != size:
            raise AssayError(
                f"{what}: {name} arrived with {got[name]} bytes, but it is listed with {size}; "
                "nothing was written"
            )
    extra = sorted(set(got) - set(expected))
    if extra:
        raise AssayError(
            f"{what}: the download holds {extra[0]}, which the checkpoint does not list; "
            "nothing was written"
        )


def _place(staging: Path, dest: Path) -> None:
    """Move the verified download to ``dest``: renamed whole when ``dest`` does not exist,
    else merged into it, replacing files of the same name (never writing through a link)."""
    if not os.path.lexists(dest):
        os.rename(staging, dest)
        return
    if dest.is_symlink() or not dest.is_dir():
        raise AssayError(f"cannot download into {dest}: it is not a directory")
    for current, dirs, names in os.walk(staging):
        rel = Path(current).relative_to(staging)
        for name in dirs:
            target = dest / rel / name
            src = Path(current, name)
            if src.is_symlink():
                _replace(src, target)
            elif not os.path.lexists(target):
                target.mkdir()
            elif target.is_symlink() or not target.is_dir():
                raise AssayError(
                    f"cannot download into {dest}: {target} is in the way of a directory"
                )
        for name in names:
            _replace(Path(current, name), dest / rel / name)


def _replace(src: Path, target: Path) -> None:
    if os.path.lexists(target) and stat.S_ISDIR(os.lstat(target).st_mode):
        raise AssayError(f"cannot download {target.name}: {target} is a directory in the way")
    os.replace(src, target)


BACKUP_PATH = "/api/v1/master/backup"


def download_backup(session: HttpSession, dest: Path) -> tuple[Path, str]:
    """Download a copy of the cluster's database (admins only) to the file ``dest``, or into
    the directory ``dest`` under the name the master gives it. It is written next to its place
    and moved there only once whole; an existing file is never replaced. Returns the file and
    its format (``sqlite`` or ``pg_dump``)."""
    with _opened(session, BACKUP_PATH, None) as response:
        target = dest
        if dest.is_dir():
            disposition = response.getheader("Content-Disposition") or ""
            name = disposition.rpartition("filename=")[2].strip('"') or "assay-backup"
            target = dest / Path(name).name
        if target.exists():
            raise AssayError(f"{target} exists: give a new file name (a backup replaces nothing)")
        expected = int(response.getheader("Content-Length") or -1)
        fd, partial = tempfile.mkstemp(prefix=f".{target.name}.downloading-", dir=target.parent)
        try:
            got = 0
            with os.fdopen(fd, "wb") as out:
                while piece := _read(response, session, 1024 * 1024):
                    out.write(piece)
                    got += len(piece)
            if expected >= 0 and got != expected:
                raise AssayError(
                    f"the backup was cut off: {got} of {expected} bytes arrived; nothing was kept"
                )
            os.link(partial, target)  # fails rather than replace a file made meanwhile
        finally:
            Path(partial).unlink(missing_ok=True)
        return target, response.getheader("X-Assay-Backup-Format") or "unknown"
