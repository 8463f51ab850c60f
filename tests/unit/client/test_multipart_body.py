"""The client's streamed multipart body, read back by the parser the master uses."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import MultiPartParser

from assay.client._upload import CHUNK, FilePart, MultipartBody
from assay.errors import AssayError


def parse(body: MultipartBody) -> tuple[FormData, bytes]:
    """What the master's form parser makes of ``body``, and the file part's bytes."""

    async def run() -> tuple[FormData, bytes]:
        async def stream() -> AsyncIterator[bytes]:
            for chunk in body.chunks():
                yield bytes(chunk)

        headers = Headers({"content-type": body.content_type})
        form = await MultiPartParser(headers, stream()).parse()
        upload = form["context"]
        assert isinstance(upload, UploadFile)
        return form, await upload.read()

    return asyncio.run(run())


FIELDS = [
    ("config", "name: ünïcode ✓\nsearcher: {name: single}\n"),
    ("overrides", "a.b=1"),
    ("overrides", "c=two words"),
    ("activate", "false"),
]


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, 3 * CHUNK + 17])
def test_fields_and_file_come_back_as_sent_and_the_length_is_exact(size: int) -> None:
    data = os.urandom(size)
    body = MultipartBody(FIELDS, FilePart("context", "context.tar.gz", "application/gzip", data))
    assert body.length == sum(len(chunk) for chunk in body.chunks())
    form, content = parse(body)
    assert content == data
    assert form["config"] == FIELDS[0][1]
    assert form.getlist("overrides") == ["a.b=1", "c=two words"]
    assert form["activate"] == "false"
    upload = form["context"]
    assert isinstance(upload, UploadFile)
    assert upload.filename == "context.tar.gz" and upload.content_type == "application/gzip"


def test_a_file_on_disk_streams_the_same_bytes_as_in_memory(tmp_path: Path) -> None:
    data = os.urandom(2 * CHUNK + 5)
    path = tmp_path / "context.tar.gz"
    path.write_bytes(data)
    from_disk = MultipartBody(FIELDS, FilePart("context", "c.tgz", "application/gzip", path))
    assert from_disk.length == sum(len(chunk) for chunk in from_disk.chunks())
    assert parse(from_disk)[1] == data
    assert max(len(chunk) for chunk in from_disk.file.chunks()) == CHUNK


def test_a_quote_or_newline_in_a_name_cannot_break_the_header() -> None:
    body = MultipartBody(
        [('con"fig\r\nX-Evil: 1', "v")],
        FilePart("context", 'a"b\nc.tgz', "application/gzip", b"data"),
    )
    form, content = parse(body)
    assert content == b"data"
    assert form["con%22fig%0D%0AX-Evil: 1"] == "v"
    upload = form["context"]
    assert isinstance(upload, UploadFile) and upload.filename == "a%22b%0Ac.tgz"


def test_a_file_that_changes_after_its_length_was_declared_is_not_sent(tmp_path: Path) -> None:
    path = tmp_path / "context.tar.gz"
    path.write_bytes(b"x" * 100)
    body = MultipartBody(FIELDS, FilePart("context", "context.tar.gz", "application/gzip", path))
    path.write_bytes(b"x" * 50)
    with pytest.raises(AssayError, match=r"changed while it was being sent \(100 bytes"):
        list(body.chunks())
    path.write_bytes(b"x" * (CHUNK + 1))
    with pytest.raises(AssayError, match="changed while it was being sent"):
        list(body.chunks())
