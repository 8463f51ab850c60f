"""The experiment upload: a ``multipart/form-data`` body carrying the config and the context.

Starlette's multipart parser (python-multipart) streams the body: the one file part, the context,
is spooled to a temporary file on disk past its first MiB, and text fields are kept in memory.
:class:`~assay.api._limits.BodyLimit` cuts the body off at :data:`UPLOAD_BODY_LIMIT`, so at most
that much is ever read, and :func:`read_context` refuses an archive over
:func:`~assay.context.archive_limit` before loading any of it.

Routes of :class:`UploadRoute` read their form before FastAPI does, so that what the framework
would refuse in its own words is refused in ours: a text field past its limit
(:func:`part_limit`) with 413 naming the field and the limit, one that is not UTF-8 (Starlette
would read it as Latin-1) with 400 naming the field and the offset of the first bad byte, as the
CLI refuses a config file.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import aclosing
from typing import Any

from fastapi import Request, UploadFile
from fastapi.routing import APIRoute
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.responses import Response

from assay.api._limits import RouteLimit
from assay.config import MAX_CONFIG_BYTES, decode_config
from assay.context import (
    DEFAULT_CONTEXT_LIMIT,
    archive_limit,
    archive_too_large_message,
    format_limit,
)
from assay.errors import InvalidRequest, TooLarge

CONTEXT_PART_LIMIT = archive_limit()
"""The most bytes the context part (a tar.gz) may have."""

CONFIG_PART_LIMIT = MAX_CONFIG_BYTES
"""The most bytes the ``config`` field (and ``original_config``) may have: a config's limit.
What a client sends may be larger than the file its user wrote (the CLI sends an NNI config
with its search space file inline), and is held to the same limit as any config."""

CONFIG_PARTS = frozenset({"config", "original_config"})

TEXT_PART_LIMIT = 2**20
"""The most bytes any other text field may have (an override, a note, ``activate``)."""

UPLOAD_BODY_LIMIT = CONTEXT_PART_LIMIT + 2 * CONFIG_PART_LIMIT + 2 * 2**20
"""The whole body: the context, the config and its original, plus room for the overrides, the
notes and multipart framing."""

UPLOAD_ROUTE_LIMIT = RouteLimit(
    UPLOAD_BODY_LIMIT,
    hint=(
        f"a packed context may be at most {format_limit(CONTEXT_PART_LIMIT)} "
        f"({format_limit(DEFAULT_CONTEXT_LIMIT)} of files); leave big files out of it "
        "(.assayignore) and load data from outside it"
    ),
)

UPLOAD_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "content": {
            "multipart/form-data": {"encoding": {"context": {"contentType": "application/gzip"}}}
        }
    }
}

UPLOAD_DESCRIPTION = f"""Create an experiment from its config and its context directory.

The body is `multipart/form-data`: the config as the `config` text field, each override as an
`overrides` field (`key.path=value`, repeat the field), `notes` (lines for the experiment's
log, repeat the field), `activate` (`false` creates the experiment
PAUSED), and the context directory as a gzip-compressed tar file in the `context` file part.

The context may hold at most {format_limit(DEFAULT_CONTEXT_LIMIT)} of files and its archive at most
{format_limit(CONTEXT_PART_LIMIT)}; the config (and `original_config`) at most
{format_limit(CONFIG_PART_LIMIT)}, every other text field at most {format_limit(TEXT_PART_LIMIT)};
the whole body at most {format_limit(UPLOAD_BODY_LIMIT)}. A larger body or field, declared or
streamed, is answered with 413 as soon as it passes its limit. Text fields are UTF-8: a field that
is not is refused with 400 naming the offset of its first bad byte.
"""


def require_multipart(request: Request) -> None:
    """Refuse another content type with a message saying what the route takes (a JSON body
    would otherwise read as a form missing every field)."""
    if not _is_multipart(request):
        content_type = request.headers.get("content-type", "")
        raise InvalidRequest(
            f"POST {request.url.path} takes multipart/form-data (a `config` field, optional "
            "`overrides` and `activate` fields, and the context tar.gz as the `context` file), "
            f"not {content_type or 'a body without a Content-Type'}"
        )


async def read_context(upload: UploadFile) -> bytes:
    """The bytes of the context part, refused with 413 when over the limit without reading them.

    The parser counted the part while spooling it, so the size is known before anything is read.
    """
    if upload.size is not None and upload.size > CONTEXT_PART_LIMIT:
        raise TooLarge(archive_too_large_message("the context archive", upload.size))
    data = await upload.read(CONTEXT_PART_LIMIT + 1 if upload.size is None else upload.size)
    if len(data) > CONTEXT_PART_LIMIT:
        raise TooLarge(archive_too_large_message("the context archive", len(data)))
    return data


def part_limit(name: str) -> int:
    """The most bytes the text field ``name`` of an upload may have."""
    return CONFIG_PART_LIMIT if name in CONFIG_PARTS else TEXT_PART_LIMIT


def part_too_large(route: str, name: str) -> TooLarge:
    limit = part_limit(name)
    if name in CONFIG_PARTS:
        advice = (
            "a config may have at most that (an NNI config's search space inline included); "
            "shorten it: a long list of values in the search space is the usual cause, and a "
            "range (such as uniform, int or randint) can take its place"
        )
    else:
        advice = f"each field but config and original_config may have at most {format_limit(limit)}"
    return TooLarge(
        f"the {name} field of {route} is over its limit of {format_limit(limit)}; {advice}"
    )


class _Parts(MultiPartParser):
    """Starlette's multipart parser with each text field held to :func:`part_limit` and read as
    UTF-8 only."""

    def __init__(
        self,
        request: Request,
        stream: AsyncGenerator[bytes, None],
        *,
        max_files: int | float,
        max_fields: int | float,
    ) -> None:
        # Each field's own limit is checked here; Starlette's one limit for all is set above it.
        most = max(CONFIG_PART_LIMIT, TEXT_PART_LIMIT)
        super().__init__(
            request.headers, stream, max_files=max_files, max_fields=max_fields, max_part_size=most
        )
        self._route = f"{request.method} {request.url.path}"

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._current_part
        if part.file is None and len(part.data) + end - start > part_limit(part.field_name):
            raise part_too_large(self._route, part.field_name)
        super().on_part_data(data, start, end)

    def on_part_end(self) -> None:
        part = self._current_part
        if part.file is None:
            # Raises naming the field, the first bad byte's offset, line and column.
            decode_config(bytes(part.data), part.field_name)
        super().on_part_end()


class _UploadRequest(Request):
    async def _get_form(
        self,
        *,
        max_files: int | float = 1000,
        max_fields: int | float = 1000,
        max_part_size: int = TEXT_PART_LIMIT,
    ) -> FormData:
        # What Starlette's form() awaits; the parsed form is kept, as Starlette keeps its own.
        if not _is_multipart(self):
            # An empty form, which the route's require_multipart refuses saying what it takes.
            return await super()._get_form(
                max_files=max_files, max_fields=max_fields, max_part_size=max_part_size
            )
        if self._form is None:
            async with aclosing(self.stream()) as stream:
                parser = _Parts(self, stream, max_files=max_files, max_fields=max_fields)
                try:
                    self._form = await parser.parse()
                except MultiPartException as exc:
                    raise InvalidRequest(
                        f"the multipart body is malformed: {exc.message}"
                    ) from None
        return self._form


class UploadRoute(APIRoute):
    """A route taking ``multipart/form-data`` whose form is read by :class:`_Parts` before the
    route's handler runs: FastAPI answers any error of its own form reading with a bare 400."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        max_files = self.form_limits.get("max_files", 1000)
        max_fields = self.form_limits.get("max_fields", 1000)

        async def read_then_handle(request: Request) -> Response:
            upload = _UploadRequest(request.scope, request.receive)
            if _is_multipart(upload):
                # Errors raised here reach the app's handlers as they are; the form is then kept
                # for the handler's own call.
                await upload.form(max_files=max_files, max_fields=max_fields)
            return await handle(upload)

        return read_then_handle


def _is_multipart(request: Request) -> bool:
    content_type = request.headers.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower() == "multipart/form-data"
