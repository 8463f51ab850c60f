"""``/api/v1/checkpoints/{uuid}``: describe a checkpoint, download its files, delete it.

Reads are open to signed-in users and to trial processes (by their allocation's token: a
harness on a machine where the storage is not mounted downloads through here), a trial's token
reaching only its own experiment's checkpoints and the one it starts from; deleting is
for the owner of the checkpoint's experiment or an admin. Trial processes report checkpoints
through ``POST /api/v1/checkpoints`` (see the harness routes).
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import StreamingResponse

from assay import rest
from assay.api._deps import ActorDep, MasterDep, ReaderDep
from assay.errors import Conflict
from assay.protocol import CheckpointState

router = APIRouter(prefix="/api/v1/checkpoints", tags=["checkpoints"])

CheckpointUuid = Annotated[
    str, Path(max_length=64, pattern=rest.NO_NUL, description="The checkpoint's uuid.")
]

_FILES = {
    "description": "The checkpoint as an uncompressed tar (POSIX pax), or with `path` naming "
    "a file, that file's bytes.",
    "content": {
        "application/x-tar": {"schema": {"type": "string", "format": "binary"}},
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
    },
}


_DOTS = r"(?:\.|\.\.\.+)"
_NAMED = r"[^/\x00]*[^/.\x00][^/\x00]*"
MEMBER_PATH = rf"^(?:{_DOTS}/(?:{_DOTS}?/)*)?{_NAMED}(?:/(?:{_DOTS}|{_NAMED})?)*$"
"""A path inside a checkpoint, as the master takes it: relative, no ``..`` component, a
component naming something (not only dots), no NUL character. Written without look-arounds,
which the validator's regular expressions lack."""


@router.get(
    "/{uuid}",
    responses={403: {"description": "A trial's token, for another experiment's checkpoint."}},
)
async def get_checkpoint(
    uuid: CheckpointUuid, master: MasterDep, reader: ReaderDep
) -> rest.Checkpoint:
    """A checkpoint: its trial and experiment, step, metadata, files with their sizes, state."""
    return await master.checkpoints.describe(reader, uuid)


@router.get(
    "/{uuid}/files",
    response_class=StreamingResponse,
    responses={
        200: _FILES,
        403: {
            "description": "A trial's token, for another experiment's checkpoint; or storage "
            "or a file the master does not reach."
        },
    },
)
async def get_files(
    uuid: CheckpointUuid,
    master: MasterDep,
    reader: ReaderDep,
    path: Annotated[
        str | None,
        Query(
            max_length=4096,
            pattern=MEMBER_PATH,
            description="A file inside the checkpoint (relative, `/`-separated) to get alone, "
            "or a directory to get as a tar of everything under it.",
        ),
    ] = None,
) -> StreamingResponse:
    """The checkpoint's files, streamed from its storage as they are read: a tar of every
    file, directory and link (links are sent as links, never followed), or one file."""
    found = await master.checkpoints.files(reader, uuid, path)
    quoted = urllib.parse.quote(found.filename)
    headers = {"Content-Disposition": f"attachment; filename*=UTF-8''{quoted}"}
    if found.single:
        headers["Content-Length"] = str(found.size)
        return StreamingResponse(
            found.chunks, media_type="application/octet-stream", headers=headers
        )
    # The size of the files' data (not of the tar), for progress.
    headers["X-Assay-Files-Size"] = str(found.size)
    return StreamingResponse(found.chunks, media_type="application/x-tar", headers=headers)


@router.delete(
    "/{uuid}",
    responses={409: {"description": "Still needed by a trial, or its files could not be deleted."}},
)
async def delete_checkpoint(
    uuid: CheckpointUuid, master: MasterDep, actor: ActorDep
) -> rest.CheckpointsDeleted:
    """Delete a checkpoint: its files from storage, then its row marked DELETED. Refused for
    the latest checkpoint of a trial that has not ended and one a live trial starts from.
    Owner of its experiment or admin only."""
    done = await master.checkpoints.delete(actor, [uuid])
    for reason in done.failed.values():
        # One partly deleted stays DELETING, as its reason says; the others are as they were.
        partly = (await master.reads.checkpoint(uuid)).state == CheckpointState.DELETING
        raise Conflict(
            f"could not delete checkpoint {uuid} from storage ({reason})"
            + ("" if partly else "; it is kept as it was")
        )
    return done


@router.post("/delete")
async def delete_checkpoints(
    body: rest.CheckpointDelete, master: MasterDep, actor: ActorDep
) -> rest.CheckpointsDeleted:
    """Delete several checkpoints (as `DELETE /checkpoints/{uuid}` does each). Refused as a
    whole when one is unknown, not the caller's, or still needed; otherwise each is tried,
    and `failed` names those whose files could not be deleted, with the reason."""
    return await master.checkpoints.delete(actor, body.uuids, dry_run=body.dry_run)
