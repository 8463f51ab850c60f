"""Following a piece of work's log lines as they come: one implementation for every kind
(trials, tasks, and whatever runs next), each kind giving only how to read a page of its lines
and which long-poll key its new lines wake."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from assay.master.kernel._waiters import Waiters

KEEP_ALIVE_SECONDS = 15.0
"""How long a follower waits for a line before it is sent an empty batch (a keep-alive)."""


class LogLine(Protocol):
    @property
    def id(self) -> int:
        """Lines are read in the order of their ids; a follower resumes after the last."""
        ...


E = TypeVar("E", bound=LogLine)


@dataclass(frozen=True)
class LogBatch(Generic[E]):
    """A batch of a followed piece of work's log lines."""

    entries: list[E]
    ended: bool
    """The work had ended when the lines were read, and these are its last ones."""


ReadPage = Callable[[int], Awaitable[LogBatch[E]]]
"""``read(after)``: the lines with an id above ``after`` (a page of them), and whether the work
has ended; raises :class:`~assay.errors.NotFound` when there is no such work."""


async def follow_logs(
    waiters: Waiters, key: Hashable, read: ReadPage[E], after: int = 0
) -> AsyncIterator[LogBatch[E]]:
    """The lines with an id above ``after`` as they come, in batches.

    Reads the first page at once, so a missing piece of work raises before anything is
    streamed. An empty batch that has not ended says nothing came for ``KEEP_ALIVE_SECONDS``;
    the batch with ``ended`` is the last. The iteration also stops, without that batch, when the
    master shuts down (``waiters`` closed)."""
    since = waiters.version(key)
    first = await read(after)
    return _follow(waiters, key, read, after, since, first)


async def _follow(
    waiters: Waiters, key: Hashable, read: ReadPage[E], last: int, since: int, batch: LogBatch[E]
) -> AsyncIterator[LogBatch[E]]:
    while True:
        if batch.entries:
            last = batch.entries[-1].id
            # Lines read as the work ended need not be its last: the next read tells.
            yield LogBatch(batch.entries, ended=False)
        elif batch.ended:
            yield batch
            return
        else:
            changed = await waiters.wait(key, since, KEEP_ALIVE_SECONDS)
            if waiters.closed:
                return
            if not changed:
                yield batch
        since = waiters.version(key)
        batch = await read(last)
