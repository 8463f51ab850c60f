"""Streaming a file to the master as ``multipart/form-data``.

The file goes out in chunks straight from memory or disk, never encoded or copied whole, with
its length declared up front (so the master can refuse an oversized body before reading it)
and progress reported as the bytes leave.
"""

from __future__ import annotations

import http.client
import json
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.client._http import HttpSession, failure_reason
from assay.errors import AssayError, MasterUnreachable

CHUNK = 256 * 1024

Progress = Callable[[int, int], None]
"""Called with (bytes sent so far, bytes in the whole body) as the body goes out."""


@dataclass(frozen=True)
class FilePart:
    """The file of a multipart body: the field it fills, the file name sent with it, its media
    type, and its content, as bytes or a path to stream from."""

    field: str
    filename: str
    content_type: str
    content: bytes | Path

    def size(self) -> int:
        if isinstance(self.content, Path):
            return self.content.stat().st_size
        return len(self.content)

    def chunks(self) -> Iterator[bytes | memoryview]:
        if isinstance(self.content, Path):
            with self.content.open("rb") as handle:
                while chunk := handle.read(CHUNK):
                    yield chunk
            return
        view = memoryview(self.content)
        for start in range(0, len(view), CHUNK):
            yield view[start : start + CHUNK]


class MultipartBody:
    """A ``multipart/form-data`` body of text fields followed by one file, produced in chunks.

    Fields repeat as often as they are given (``[("overrides", "a=1"), ("overrides", "b=2")]``).
    """

    def __init__(self, fields: Sequence[tuple[str, str]], file: FilePart | None) -> None:
        self.boundary = f"assay-{secrets.token_hex(16)}"
        self.content_type = f"multipart/form-data; boundary={self.boundary}"
        head = b"".join(self._field(name, value) for name, value in fields)
        self._head = head + (self._file_header(file) if file is not None else b"")
        self._tail = (
            f"\r\n--{self.boundary}--\r\n" if file is not None else f"--{self.boundary}--\r\n"
        ).encode()
        self.file = file
        self._file_size = file.size() if file is not None else 0
        self.length = len(self._head) + self._file_size + len(self._tail)

    def chunks(self) -> Iterator[bytes | memoryview]:
        yield self._head
        if self.file is None:
            yield self._tail
            return
        sent = 0
        for chunk in self.file.chunks():
            sent += len(chunk)
            if sent > self._file_size:
                break
            yield chunk
        if sent != self._file_size:
            # The declared length is already on the wire: a file that changed cannot be sent.
            raise AssayError(
                f"{self.file.filename} changed while it was being sent "
                f"({self._file_size} bytes were declared); try again"
            )
        yield self._tail

    def _field(self, name: str, value: str) -> bytes:
        return (
            (
                f"--{self.boundary}\r\n"
                f'Content-Disposition: form-data; name="{_quote(name)}"\r\n'
                "Content-Type: text/plain; charset=utf-8\r\n\r\n"
            ).encode()
            + value.encode()
            + b"\r\n"
        )

    def _file_header(self, file: FilePart) -> bytes:
        return (
            f"--{self.boundary}\r\n"
            f'Content-Disposition: form-data; name="{_quote(file.field)}"; '
            f'filename="{_quote(file.filename)}"\r\n'
            f"Content-Type: {file.content_type}\r\n\r\n"
        ).encode()


def post_multipart(
    session: HttpSession,
    path: str,
    body: MultipartBody,
    *,
    timeout: float = 300.0,
    progress: Progress | None = None,
) -> Any:
    """POST ``body`` to ``path`` of ``session``'s master, on a connection of its own; the decoded
    JSON answer.

    Raises the error the master answered with (also when it answered early, refusing the body
    before it was all sent) and :class:`MasterUnreachable` when nothing answers.
    """
    base_url = session.base_url
    conn = session.open_connection(timeout)
    headers = session.headers(
        {"Content-Type": body.content_type, "Content-Length": str(body.length)}
    )
    try:
        try:
            conn.connect()
        except OSError as exc:
            raise MasterUnreachable(
                f"no master answering at {base_url} ({failure_reason(exc)})"
            ) from exc
        try:
            _send(conn, path, headers, body, progress)
        except OSError as exc:
            # The master may have refused the body early (413) and closed the connection: its
            # answer says why, when it can still be read.
            closed = isinstance(exc, (BrokenPipeError, ConnectionResetError))
            response = _early_response(conn) if closed else None
            if response is None:
                raise MasterUnreachable(
                    f"master at {base_url} stopped taking the upload: {failure_reason(exc)}"
                ) from exc
            return _decode(response, session)
        try:
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise MasterUnreachable(f"master at {base_url} stopped answering: {exc}") from exc
        return _decode(response, session)
    finally:
        conn.close()


def _send(
    conn: http.client.HTTPConnection,
    path: str,
    headers: dict[str, str],
    body: MultipartBody,
    progress: Progress | None,
) -> None:
    conn.putrequest("POST", path, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    sent = 0
    if progress is not None:
        progress(sent, body.length)
    for chunk in body.chunks():
        conn.send(chunk)
        sent += len(chunk)
        if progress is not None:
            progress(sent, body.length)


def _early_response(conn: http.client.HTTPConnection) -> http.client.HTTPResponse | None:
    try:
        return conn.getresponse()
    except (OSError, http.client.HTTPException):
        return None


def _decode(response: http.client.HTTPResponse, session: HttpSession) -> Any:
    try:
        data = response.read()
    except OSError as exc:
        raise MasterUnreachable(f"the master's answer was cut off: {exc}") from exc
    session.raise_for_error(response.status, data)
    try:
        return json.loads(data) if data else None
    except ValueError as exc:
        raise AssayError(
            f"the master answered {response.status} with a body that is not JSON"
        ) from exc


def _quote(value: str) -> str:
    """A field or file name inside a quoted header parameter, escaped as browsers do."""
    return value.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
