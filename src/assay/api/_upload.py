"""The experiment upload: a ``multipart/form-data`` body carrying the config and the context.

Starlette's multipart parser (python-multipart) streams the body: text fields are kept in
memory up to ``max_part_size`` each, and the one file part, the context, is spooled to a
temporary file on disk past its first MiB. :class:`~assay.api._limits.BodyLimit` cuts the body
off at :data:`UPLOAD_BODY_LIMIT`, so at most that much is ever read, and :func:`read_context`
refuses an archive over :func:`~assay.context.archive_limit` before loading any of it.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, UploadFile

from assay.api._limits import RouteLimit
from assay.context import (
    DEFAULT_CONTEXT_LIMIT,
    archive_limit,
    archive_too_large_message,
    format_limit,
)
from assay.errors import InvalidRequest, TooLarge

CONTEXT_PART_LIMIT = archive_limit()
"""The most bytes the context part (a tar.gz) may have."""

UPLOAD_BODY_LIMIT = CONTEXT_PART_LIMIT + 2 * 2**20
"""The whole body: the context plus room for the config, the overrides and multipart framing."""

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
{format_limit(CONTEXT_PART_LIMIT)}; the whole body at most {format_limit(UPLOAD_BODY_LIMIT)}.
A larger body, declared or streamed, is answered with 413 as soon as it passes the limit.
"""


def require_multipart(request: Request) -> None:
    """Refuse another content type with a message saying what the route takes (a JSON body
    would otherwise read as a form missing every field)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "multipart/form-data":
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
