"""Live events for viewers (the web UI): an in-process publish/subscribe of what changed.

The master publishes a batch where it writes the change: after a transaction that changed
experiments or trials commits (read from the transaction's own rows, no polling), and after
metric reports are stored. Each batch gets the next sequence number; the latest batches (at
most ``KEPT`` of them, holding at most ``KEPT_ROWS`` rows) are kept so a viewer that reconnects
with the id of the last batch it saw gets every later one, none twice. Each subscriber has a
bounded queue: one that falls ``QUEUE`` batches or ``QUEUE_ROWS`` rows behind is dropped with a
``resync`` (it reads again what it shows), so a slow viewer never holds memory or slows the
master. Rows bound them as well as batches because one batch can carry a thousand metric rows
(about 2 KiB each as models): by count alone, 4 busy trials made the master hold 1.5 GiB.

Ids are ``<epoch>-<seq>``: the epoch is new at every start of the master, so an id from an
earlier run (whose batches are gone) is answered with a ``resync``, never with a gap.

Everything here runs on the event loop; publishing never waits.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from assay import rest

KEPT = 4096
"""How many of the latest batches are kept for viewers that reconnect."""

KEPT_ROWS = 10_000
"""How many rows (see :func:`rows`) the kept batches may hold; the newest batch is always kept."""

QUEUE = 1024
"""How many batches a subscriber may have waiting before it is dropped."""

QUEUE_ROWS = 10_000
"""How many rows a subscriber may have waiting before it is dropped (a single batch of more
rows is still delivered to a subscriber with nothing waiting). At least ``KEPT_ROWS``: a viewer
resuming inside the kept window is queued all of it at once."""

assert KEPT_ROWS <= QUEUE_ROWS

MERGE = 64
"""At most this many waiting batches are sent to a viewer as one message."""


def rows(batch: rest.EventBatch) -> int:
    """What a batch weighs against the bounds: one per experiment, trial and metric row it
    carries, and one for the batch."""
    return (
        1
        + len(batch.experiments)
        + len(batch.trials)
        + sum(len(told.metrics) for told in batch.metrics)
    )


@dataclass(frozen=True)
class Scope:
    """What one viewer follows: without ids, every experiment's changes (the list page); with
    ``experiment_id``, that experiment, its trials and their metrics; with ``trial_id`` too,
    that experiment and only that trial and its metrics. ``queue`` and ``cluster`` add those
    flags (the job queue's and the cluster's pages)."""

    experiment_id: int | None = None
    trial_id: int | None = None
    queue: bool = False
    cluster: bool = False

    def select(self, batch: rest.EventBatch) -> rest.EventBatch | None:
        """The part of ``batch`` this viewer follows, or None when nothing is."""
        part = self._experiments_part(batch)
        queue, cluster = self.queue and batch.queue, self.cluster and batch.cluster
        if not (queue or cluster):
            return part
        if part is None:
            return rest.EventBatch(queue=queue, cluster=cluster)
        if part.queue == queue and part.cluster == cluster:
            return part
        return part.model_copy(update={"queue": queue, "cluster": cluster})

    def _experiments_part(self, batch: rest.EventBatch) -> rest.EventBatch | None:
        exp_id, trial_id = self.experiment_id, self.trial_id
        if exp_id is None:
            if not batch.experiments:
                return None
            if not (batch.trials or batch.metrics or batch.queue or batch.cluster):
                return batch
            return rest.EventBatch(experiments=batch.experiments)
        exps = [e for e in batch.experiments if e.id == exp_id]
        trials = [
            t
            for t in batch.trials
            if t.experiment_id == exp_id and (trial_id is None or t.id == trial_id)
        ]
        metrics = [
            m
            for m in batch.metrics
            if m.experiment_id == exp_id and (trial_id is None or m.trial_id == trial_id)
        ]
        if not (exps or trials or metrics):
            return None
        return rest.EventBatch(experiments=exps, trials=trials, metrics=metrics)


@dataclass(frozen=True)
class Message:
    """One message of a viewer's stream: an id (empty for none), a kind and its data."""

    id: str
    kind: rest.EventKind
    data: rest.EventBatch | rest.EventResync


@dataclass(eq=False)
class _Subscriber:
    scope: Scope
    queue: deque[tuple[int, rest.EventBatch, int]] = field(default_factory=deque)
    """(sequence number, the part followed, its rows)"""
    rows: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    dropped: bool = False


class EventHub:
    def __init__(self) -> None:
        self.epoch = secrets.token_hex(4)
        self.seq = 0
        self._kept: deque[tuple[int, rest.EventBatch, int]] = deque()
        self._kept_rows = 0
        self._subscribers: set[_Subscriber] = set()
        self.closed = False

    def event_id(self, seq: int) -> str:
        return f"{self.epoch}-{seq}"

    @property
    def position(self) -> str:
        """The id of the last batch published: a read made after taking it misses nothing a
        stream resumed after it (``Last-Event-ID``) would not replay."""
        return self.event_id(self.seq)

    def publish(self, batch: rest.EventBatch) -> None:
        """Number ``batch``, keep it, and queue it for every subscriber that follows part of
        it (an empty batch is dropped)."""
        if batch.is_empty():
            return
        self.seq += 1
        weight = rows(batch)
        self._kept.append((self.seq, batch, weight))
        self._kept_rows += weight
        while len(self._kept) > KEPT or (self._kept_rows > KEPT_ROWS and len(self._kept) > 1):
            self._kept_rows -= self._kept.popleft()[2]
        for sub in self._subscribers:
            self._offer(sub, self.seq, batch)

    def _offer(self, sub: _Subscriber, seq: int, batch: rest.EventBatch) -> None:
        if sub.dropped:
            return
        part = sub.scope.select(batch)
        if part is None:
            return
        weight = rows(part)
        if sub.queue and (len(sub.queue) >= QUEUE or sub.rows + weight > QUEUE_ROWS):
            sub.dropped = True
            sub.queue.clear()
            sub.rows = 0
        else:
            sub.queue.append((seq, part, weight))
            sub.rows += weight
        sub.ready.set()

    def close(self) -> None:
        """End every stream: the master is going away."""
        self.closed = True
        for sub in self._subscribers:
            sub.ready.set()

    def _resume_from(self, last_event_id: str | None) -> int | None:
        """The sequence number to resume after, or None when the batches after
        ``last_event_id`` are not all kept (or the id is not one of this run's)."""
        if last_event_id is None:
            return self.seq
        epoch, _, raw = last_event_id.strip().partition("-")
        if epoch != self.epoch or not raw.isdigit():
            return None
        seq = int(raw)
        if seq > self.seq:
            return None
        oldest = self._kept[0][0] if self._kept else self.seq + 1
        if seq < oldest - 1:
            return None
        return seq

    async def follow(
        self, scope: Scope, last_event_id: str | None, keep_alive: float
    ) -> AsyncIterator[Message | None]:
        """The viewer's stream: None at once (it is subscribed: nothing published from now
        on is missed), the kept batches after ``last_event_id`` (or a resync when they are
        not all kept), then new ones as they are published. Later Nones say nothing came for
        ``keep_alive`` seconds. Ends when the master shuts down, and after the resync of a
        subscriber that fell too far behind."""
        sub = _Subscriber(scope)
        # Registered and filled from the kept batches without yielding to the loop in between,
        # so no batch is both replayed and queued, and none falls between the two.
        after = self._resume_from(last_event_id)
        self._subscribers.add(sub)
        if after is not None:
            for seq, batch, _ in self._kept:
                if seq > after:
                    self._offer(sub, seq, batch)
        # Its id is the last one before the subscription: what is queued from now on follows.
        missed = None
        if after is None:
            missed = self._resync("the changes since the given Last-Event-ID are not kept")
        try:
            yield None
            if missed is not None:
                yield missed
            while not self.closed:
                if not sub.queue and not sub.dropped:
                    sub.ready.clear()
                    try:
                        await asyncio.wait_for(sub.ready.wait(), keep_alive)
                    except TimeoutError:
                        yield None
                        continue
                if self.closed:
                    return
                if sub.dropped:
                    yield self._resync("this viewer fell too far behind")
                    return
                yield self._take(sub)
        finally:
            self._subscribers.discard(sub)

    def _resync(self, reason: str) -> Message:
        # Carries the current id: a viewer that reconnects with it misses nothing after it.
        return Message(
            self.event_id(self.seq), rest.EventKind.RESYNC, rest.EventResync(reason=reason)
        )

    def _take(self, sub: _Subscriber) -> Message:
        """The waiting batches (up to ``MERGE``) as one, with the id of the last."""
        taken = [sub.queue.popleft() for _ in range(min(MERGE, len(sub.queue)))]
        sub.rows -= sum(weight for _, _, weight in taken)
        if len(taken) == 1:
            seq, batch, _ = taken[0]
        else:
            seq = taken[-1][0]
            batch = rest.EventBatch(
                experiments=[e for _, b, _ in taken for e in b.experiments],
                trials=[t for _, b, _ in taken for t in b.trials],
                metrics=[m for _, b, _ in taken for m in b.metrics],
                queue=any(b.queue for _, b, _ in taken),
                cluster=any(b.cluster for _, b, _ in taken),
            )
        return Message(self.event_id(seq), rest.EventKind.BATCH, batch)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)
