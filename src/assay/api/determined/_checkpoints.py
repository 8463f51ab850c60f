"""Checkpoints for the real ``det`` and Determined's SDK: describe one (``det checkpoint
describe``, ``client.get_checkpoint``), list an experiment's or a trial's (``det experiment
list-checkpoints``, ``Experiment.list_checkpoints``/``top_checkpoint``, the same of a
``Trial``), download one through the master (``det checkpoint download``,
``Checkpoint.download`` when the storage is not reachable from the client, or with
``mode=MASTER``), and delete some (``det checkpoint delete``).

Downloads are the master's stream of the checkpoint's files (as ``assay checkpoint download``
gets them), compressed or repacked as the client's ``Accept`` asks."""

from __future__ import annotations

import io
import math
import stat
import tarfile
import time
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query
from fastapi.responses import StreamingResponse

from assay import rest
from assay.api._deps import MasterDep
from assay.api.determined._base import ActorDep, Limit, Offset, Order, signed_router
from assay.errors import Conflict, InvalidRequest
from assay.master.artifacts import TrainedCheckpoint
from assay.rest import determined as det

router = signed_router()

CheckpointUuid = Annotated[
    str, Path(max_length=64, pattern=rest.NO_NUL, description="The checkpoint's uuid.")
]
Id = Annotated[int, Path(ge=1, le=rest.INT_MAX)]


@router.get("/api/v1/checkpoints/{checkpoint_uuid}")
async def get_checkpoint(
    checkpoint_uuid: CheckpointUuid, master: MasterDep, actor: ActorDep
) -> det.GetCheckpointResponse:
    found = await master.checkpoints.trained(actor, checkpoint_uuid)
    return det.GetCheckpointResponse(checkpoint=checkpoint_view(found))


def _listing(
    sort_by_attr: Annotated[det.CheckpointSortBy, Query(alias="sortByAttr")] = (
        det.CheckpointSortBy.UNSPECIFIED
    ),
    sort_by_metric: Annotated[str | None, Query(alias="sortByMetric", max_length=256)] = None,
    order_by: Order = det.OrderBy.UNSPECIFIED,
    states: Annotated[list[det.CheckpointState], Query(max_length=10)] = [],  # noqa: B006
    offset: Offset = 0,
    limit: Limit = 0,
) -> Listing:
    """How a list of checkpoints is asked for: its order, the states it holds, its page."""
    return Listing(sort_by_attr, sort_by_metric, order_by, states, offset, limit)


ListingDep = Annotated["Listing", Depends(_listing)]


@router.get("/api/v1/experiments/{experiment_id}/checkpoints")
async def experiment_checkpoints(
    experiment_id: Id,
    master: MasterDep,
    listing: ListingDep,
) -> det.CheckpointList:
    """The experiment's checkpoints, as ``det experiment list-checkpoints`` and the SDK's
    ``Experiment.list_checkpoints`` ask for them."""
    found = await master.checkpoints.trained_of(experiment_id=experiment_id)
    return checkpoint_list(found, listing)


@router.get("/api/v1/trials/{trial_id}/checkpoints")
async def trial_checkpoints(
    trial_id: Id,
    master: MasterDep,
    listing: ListingDep,
) -> det.CheckpointList:
    """The trial's checkpoints (``Trial.list_checkpoints``, ``Trial.top_checkpoint``)."""
    found = await master.checkpoints.trained_of(trial_id=trial_id)
    return checkpoint_list(found, listing)


@router.delete("/api/v1/checkpoints")
async def delete_checkpoints(
    body: det.DeleteCheckpoints, master: MasterDep, actor: ActorDep
) -> det.DeleteCheckpointsResponse:
    """Delete the checkpoints, files first (as ``assay checkpoint delete``): refused as a
    whole when one is unknown, not the caller's or still needed; answered once done."""
    done = await master.checkpoints.delete(actor, body.checkpoint_uuids)
    if done.failed:
        reasons = "; ".join(f"{uuid}: {why}" for uuid, why in done.failed.items())
        raise Conflict(f"could not delete these checkpoints from storage ({reasons})")
    return det.DeleteCheckpointsResponse()


ARCHIVE_TYPES = ("application/gzip", "application/x-tar", "application/zip")
"""What a checkpoint is downloaded as through the master, as Determined's master offers it:
a gzipped tar (what the SDK asks for), a tar, or a zip."""


@router.get("/checkpoints/{checkpoint_uuid}", response_class=StreamingResponse)
async def download(
    checkpoint_uuid: CheckpointUuid,
    master: MasterDep,
    actor: ActorDep,
    accept: Annotated[str | None, Header(max_length=1024)] = None,
) -> StreamingResponse:
    """The checkpoint's files as one archive of the type ``Accept`` names (any: gzip)."""
    media = archive_type(accept)
    found = await master.checkpoints.files(actor, checkpoint_uuid, None)
    chunks: Iterator[bytes] = found.chunks
    suffix = ".tar"
    if media == "application/gzip":
        chunks, suffix = gzipped(found.chunks), ".tar.gz"
    elif media == "application/zip":
        chunks, suffix = zip_of_tar(found.chunks), ".zip"
    headers = {"Content-Disposition": f'attachment; filename="{checkpoint_uuid}{suffix}"'}
    return StreamingResponse(chunks, media_type=media, headers=headers)


def archive_type(accept: str | None) -> str:
    """The first archive type ``accept`` names (none named, or ``*/*``: gzip); refused when
    it names only others."""
    named = [part.split(";")[0].strip().lower() for part in (accept or "").split(",")]
    named = [n for n in named if n]
    for media in named:
        if media in ARCHIVE_TYPES:
            return media
        if media in ("*/*", "application/*"):
            return ARCHIVE_TYPES[0]
    if not named:
        return ARCHIVE_TYPES[0]
    raise InvalidRequest(
        f"a checkpoint downloads as {', '.join(ARCHIVE_TYPES)}; the request accepts only "
        f"{accept}: send Accept with one of those"
    )


def gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks`` as one gzip stream, compressed as they come."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        packed = packer.compress(chunk)
        if packed:
            yield packed
    yield packer.flush()


_PIECE = 1 << 20


def zip_of_tar(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The tar stream ``chunks`` repacked as a zip, made as it is read: directories, files
    (with their modes) and links (as links, the way Info-ZIP stores them)."""
    sink = _Sink()
    source = io.BufferedReader(_Chunks(chunks), _PIECE)
    with tarfile.open(fileobj=source, mode="r|") as tar, zipfile.ZipFile(sink, "w") as out:
        for member in tar:
            info = zipfile.ZipInfo(
                member.name + ("/" if member.isdir() else ""),
                time.gmtime(max(member.mtime, 315532800))[:6],  # zip's times start in 1980
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            if member.isdir():
                info.external_attr = (stat.S_IFDIR | 0o755) << 16 | 0x10
                out.writestr(info, b"")
            elif member.issym():
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                out.writestr(info, member.linkname)
            elif member.isfile():
                info.external_attr = (stat.S_IFREG | (member.mode & 0o777)) << 16
                content = tar.extractfile(member)
                assert content is not None  # a regular file always has content
                with out.open(info, "w", force_zip64=True) as packed:
                    while piece := content.read(_PIECE):
                        packed.write(piece)
                        yield from sink.take()
            yield from sink.take()
    yield from sink.take()


class _Chunks(io.RawIOBase):
    """An iterator of bytes read as a file (what ``tarfile`` reads a stream from)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


class _Sink(io.RawIOBase):
    """Where ``zipfile`` writes (a stream it cannot seek in), handed on as it comes."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> Iterator[bytes]:
        if self._parts:
            yield b"".join(self._parts)
            self._parts.clear()


# -- conversion ----------------------------------------------------------------------------


def checkpoint_view(found: TrainedCheckpoint) -> det.Checkpoint:
    """A checkpoint as Determined's clients read it: its step in its metadata (where they
    look for it), sizes as decimal strings, its training with the searcher's metric."""
    ckpt = found.checkpoint
    metadata = dict(ckpt.metadata)
    metadata.setdefault("steps_completed", ckpt.steps_completed)
    validation = found.validation
    return det.Checkpoint(
        uuid=ckpt.uuid,
        task_id=f"trial-{ckpt.trial_id}",
        allocation_id=ckpt.allocation_id,
        report_time=det.timestamp(ckpt.reported_at),
        resources={path: str(size) for path, size in ckpt.resources.items()},
        metadata=metadata,
        state=det.checkpoint_state(ckpt.state),
        training=det.CheckpointTrainingMetadata(
            trial_id=ckpt.trial_id,
            experiment_id=ckpt.experiment_id,
            experiment_config=found.config,
            hparams=found.hparams,
            validation_metrics=(
                None if validation is None else det.Metrics(avg_metrics=validation)
            ),
            searcher_metric=_number((validation or {}).get(_searcher(found.config)[0] or "")),
        ),
    )


@dataclass(frozen=True)
class Listing:
    """How a list of checkpoints was asked for (Determined's query parameters)."""

    sort_by_attr: det.CheckpointSortBy
    sort_by_metric: str | None
    order_by: det.OrderBy
    states: Sequence[det.CheckpointState]
    offset: int
    limit: int


def checkpoint_list(found: Sequence[TrainedCheckpoint], listing: Listing) -> det.CheckpointList:
    """The checkpoints in the states asked for, sorted and paged as Determined's master does:
    by a metric (the searcher's: in its better-first order unless ``orderBy`` says), those
    without it last whatever the order; or by an attribute; or by trial and step."""
    shown = [(t, checkpoint_view(t)) for t in found]
    states = set(listing.states) - {det.CheckpointState.UNSPECIFIED}
    if states:
        shown = [(t, c) for t, c in shown if c.state in states]
    metric, descending = _sort_metric(found, listing)
    if metric is not None:
        valued: list[tuple[float, det.Checkpoint]] = []
        without: list[det.Checkpoint] = []
        for t, c in shown:
            value = _number((t.validation or {}).get(metric))
            if value is None:
                without.append(c)
            else:
                valued.append((-value if descending else value, c))
        # A stable sort: ties stay by trial and step, as the master lists them.
        valued.sort(key=lambda vc: vc[0])
        ordered = [c for _, c in valued] + without
    else:
        key = _ATTRIBUTE_KEYS.get(listing.sort_by_attr)
        if key is not None:
            shown.sort(key=lambda tc: key(tc[0]), reverse=listing.order_by == det.OrderBy.DESC)
        ordered = [c for _, c in shown]
    page = det.paginate(len(ordered), listing.offset, listing.limit)
    return det.CheckpointList(
        checkpoints=ordered[page.start_index : page.end_index], pagination=page
    )


_ATTRIBUTE_KEYS: dict[det.CheckpointSortBy, Any] = {
    det.CheckpointSortBy.UUID: lambda t: t.checkpoint.uuid,
    det.CheckpointSortBy.TRIAL_ID: lambda t: (t.checkpoint.trial_id, t.checkpoint.reported_at),
    det.CheckpointSortBy.BATCH_NUMBER: lambda t: (
        t.checkpoint.steps_completed,
        t.checkpoint.reported_at,
    ),
    det.CheckpointSortBy.END_TIME: lambda t: t.checkpoint.reported_at,
    det.CheckpointSortBy.STATE: lambda t: (
        det.checkpoint_state(t.checkpoint.state).value,
        t.checkpoint.reported_at,
    ),
}


def _sort_metric(found: Sequence[TrainedCheckpoint], listing: Listing) -> tuple[str | None, bool]:
    """The validation metric the list is sorted by, if any, and whether descending."""
    if listing.sort_by_metric:
        return listing.sort_by_metric, listing.order_by == det.OrderBy.DESC
    if listing.sort_by_attr != det.CheckpointSortBy.SEARCHER_METRIC or not found:
        return None, False
    metric, smaller_is_better = _searcher(found[0].config)
    if listing.order_by == det.OrderBy.UNSPECIFIED:
        return metric, not smaller_is_better
    return metric, listing.order_by == det.OrderBy.DESC


def _searcher(config: dict[str, Any]) -> tuple[str | None, bool]:
    searcher = config.get("searcher") or {}
    metric = searcher.get("metric")
    return (str(metric) if metric else None), bool(searcher.get("smaller_is_better", True))


def _number(value: Any) -> float | None:
    """A metric's value as a number to sort by; None for anything else (text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
