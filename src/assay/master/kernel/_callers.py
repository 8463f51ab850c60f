"""Allocation tokens already checked, so that a trial's report does not read a row to prove
who sends it.

Every harness request carries its allocation's token; checking it was a transaction of its own
(a thread hop and a read) before the request's real work, four times in a one-second trial. A
token is now read from the database once, and kept while its allocation lives.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """The allocation a trial process proved it is, by its token."""

    allocation_id: str
    trial_id: int
    run: int


ENDS_KEPT = 65536
"""How many recent ends are remembered by allocation (:meth:`CallerCache.keep`)."""


class CallerCache:
    """``token -> Caller`` for allocations that have not ended.

    The transaction that ends an allocation acts :class:`~assay.master.kernel._tx.AllocationEnded`;
    the orchestrator calls :meth:`forget` after that commit, as it performs every action. A check
    that was reading the database while its allocation ended is not kept (:meth:`keep` with the
    :meth:`version` read before it): its answer may predate the end. Ends are remembered by
    allocation: on a large cluster dozens of allocations end every second, and a check refused
    whenever *any* had ended was never kept while the master was busy, so every request read
    its token again (after a restart under 4,000 trials, half the master's CPU; benchmark B13).
    """

    def __init__(self) -> None:
        self._by_token: dict[str, Caller] = {}
        self._token_of: dict[str, str] = {}
        self._ended = 0
        self._ended_at: OrderedDict[str, int] = OrderedDict()
        """The last ``ENDS_KEPT`` allocations ended, with the :meth:`version` each ended at."""

    def get(self, token: str) -> Caller | None:
        return self._by_token.get(token)

    def version(self) -> int:
        """How many allocations have ended so far: read before a check, given to :meth:`keep`."""
        return self._ended

    def keep(self, token: str, caller: Caller, since: int) -> None:
        """Remember a token checked against the database, unless its allocation ended since
        ``since`` (:meth:`version` before the check), or more ends passed than are remembered."""
        if since == self._ended:
            self.started(token, caller)
            return
        oldest = next(iter(self._ended_at.values()), self._ended)
        if since < oldest - 1:
            return  # ends before the oldest remembered: this one may be among them
        ended = self._ended_at.get(caller.allocation_id)
        if ended is None or ended <= since:
            self.started(token, caller)

    def started(self, token: str, caller: Caller) -> None:
        """Remember the token of an allocation whose start has just committed (called under
        the orchestrator's lock: the transaction that ends it comes later, and forgets it)."""
        self._by_token[token] = caller
        self._token_of[caller.allocation_id] = token

    def forget(self, allocation_id: str) -> None:
        """The allocation has ended (committed): its token is checked against the database
        again, which refuses it."""
        self._ended += 1
        self._ended_at[allocation_id] = self._ended
        self._ended_at.move_to_end(allocation_id)
        if len(self._ended_at) > ENDS_KEPT:
            self._ended_at.popitem(last=False)
        token = self._token_of.pop(allocation_id, None)
        if token is not None:
            self._by_token.pop(token, None)

    def __len__(self) -> int:
        return len(self._by_token)
