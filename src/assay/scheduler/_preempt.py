"""Victim search for the priority policy that stays fast over thousands of preemptions.

:func:`assay.scheduler._victims.choose_victims` walks the candidates in order of preference
until the request fits: with thousands of running allocations and thousands of requests to
make room for, that walk repeats the same long prefix for every request. This index gives the
same answer while walking each candidate at most once per request shape over the whole pass.

For each shape (slots, label) it keeps a cursor into the candidate list and, per agent, the
slots of the live candidates before the cursor. The greedy walk stops at the first candidate
after which some agent offers enough slots; equivalently at the smallest "threshold" over
agents, an agent's threshold being the candidate at which its own soon-free slots plus its
candidates reach the request. Agents that reach it before the cursor (because slots came back
to them, say) are kept in a ready set; otherwise the cursor moves on. Candidates leave when
preempted or when the requests being served get past them in the queue (requests come in
queue order, so a candidate once behind is behind for the rest of the pass).

Shapes that may spread over several agents (a gang) are left to the plain walk.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.scheduler._index import PoolState
from assay.scheduler._model import Placement, Request, Running
from assay.scheduler._queue import QueueKey
from assay.scheduler._victims import choose_victims, settle


class _Tracker:
    """The walk state of one request shape."""

    __slots__ = ("acc", "cursor", "label", "need", "ready")

    def __init__(self, need: int, label: str | None) -> None:
        self.need = need
        self.label = label
        self.cursor = 0
        self.acc: dict[str, int] = {}
        self.ready: set[str] = set()


class VictimIndex:
    """Running allocations that may be preempted, in the order victims are taken, and who may
    take them: the requester must be ahead of the victim's job in the queue."""

    def __init__(
        self,
        state: PoolState,
        candidates: Sequence[Running],
        ranks: Sequence[QueueKey],
    ) -> None:
        self.state = state
        self.allocs = list(candidates)
        self.alive = [True] * len(self.allocs)
        # Each candidate's slots per enabled agent (slots on other agents free nothing usable).
        self.parts: list[tuple[tuple[str, int], ...]] = [
            tuple((a, len(s)) for a, s in alloc.assignment.items() if s and a in state.size)
            for alloc in self.allocs
        ]
        self.by_agent: dict[str, list[int]] = {}
        for i, parts in enumerate(self.parts):
            for agent_id, _ in parts:
                self.by_agent.setdefault(agent_id, []).append(i)
        self.position = {alloc.id: i for i, alloc in enumerate(self.allocs)}
        self.by_rank = sorted(range(len(self.allocs)), key=ranks.__getitem__)
        self.ranks = list(ranks)
        self.retired = 0
        self.trackers: dict[tuple[int, str | None], _Tracker] = {}
        state.dirty.clear()

    def choose(self, req: Request, job_rank: QueueKey) -> tuple[list[Running], Placement] | None:
        """Victims for ``req`` (of a job at ``job_rank`` in the queue) and its placement, exactly
        as :func:`choose_victims` would pick them from the live candidates in order."""
        self._retire(job_rank)
        self._refresh()
        if self._may_spread(req):
            live = (a for i, a in enumerate(self.allocs) if self.alive[i])
            chosen = choose_victims(req, self.state, live)
        else:
            chosen = self._choose_single(req)
        if chosen is not None:
            self._consume(chosen[0])
        return chosen

    def _may_spread(self, req: Request) -> bool:
        if req.is_single_node:
            return False
        sizes = self.state.soon.view(req.label).sizes
        return any(size < req.slots and req.slots % size == 0 for size in sizes)

    def _tracker(self, req: Request) -> _Tracker:
        key = (req.slots, req.label)
        tracker = self.trackers.get(key)
        if tracker is None:
            tracker = self.trackers[key] = _Tracker(req.slots, req.label)
        return tracker

    def _choose_single(self, req: Request) -> tuple[list[Running], Placement] | None:
        tracker = self._tracker(req)
        soon = self.state.soon.count
        offers = self.state.offers
        if tracker.ready:
            at = min(self._threshold(tracker, a) for a in tracker.ready)
        else:
            at = -1
            acc = tracker.acc
            label = tracker.label
            alive, parts = self.alive, self.parts
            for i in range(tracker.cursor, len(self.allocs)):
                if not alive[i]:
                    continue
                for agent_id, n in parts[i]:
                    if label is not None and not offers(agent_id, label):
                        continue
                    total = acc.get(agent_id, 0) + n
                    acc[agent_id] = total
                    if soon(agent_id) + total >= tracker.need:
                        tracker.ready.add(agent_id)
                        at = i
                if at >= 0:
                    tracker.cursor = i + 1
                    break
            else:
                tracker.cursor = len(self.allocs)
                return None
        agents = [a for a in tracker.ready if self._threshold(tracker, a) == at]
        taken = sorted({i for a in agents for i in self.by_agent[a] if i <= at and self.alive[i]})
        if len(agents) == 1 and all(len(self.parts[i]) == 1 for i in taken):
            return self._settle_on(req, agents[0], taken)
        return settle(req, self.state, [self.allocs[i] for i in taken])

    def _settle_on(
        self, req: Request, agent_id: str, taken: list[int]
    ) -> tuple[list[Running], Placement]:
        """:func:`settle` when every victim sits on the one agent the request goes to."""
        state = self.state
        parts = self.parts
        total = state.soon.count(agent_id) + sum(parts[i][0][1] for i in taken)
        kept = list(taken)
        for j in range(len(kept) - 1, -1, -1):
            n = parts[kept[j]][0][1]
            if total - n >= req.slots:
                total -= n
                del kept[j]
        victims = [self.allocs[i] for i in kept]
        slots = [*state.avail[agent_id], *state.coming.get(agent_id, ())]
        for victim in victims:
            slots.extend(victim.assignment[agent_id])
        slots.sort()
        return victims, {agent_id: tuple(slots[: req.slots])}

    def _threshold(self, tracker: _Tracker, agent_id: str) -> int:
        """The candidate after which ``agent_id`` offers the tracker's request enough slots."""
        total = self.state.soon.count(agent_id)
        for i in self.by_agent[agent_id]:
            if i >= tracker.cursor:
                break
            if not self.alive[i]:
                continue
            total += sum(n for a, n in self.parts[i] if a == agent_id)
            if total >= tracker.need:
                return i
        raise AssertionError(f"agent {agent_id} is ready but never reaches {tracker.need}")

    def _kill(self, i: int) -> None:
        if not self.alive[i]:
            return
        self.alive[i] = False
        for tracker in self.trackers.values():
            if i >= tracker.cursor:
                continue
            for agent_id, n in self.parts[i]:
                if agent_id in tracker.acc:
                    tracker.acc[agent_id] -= n
                    self.state.dirty.add(agent_id)

    def _retire(self, job_rank: QueueKey) -> None:
        """Candidates of jobs at or ahead of ``job_rank`` may not be taken any more."""
        by_rank = self.by_rank
        while self.retired < len(by_rank) and self.ranks[by_rank[self.retired]] <= job_rank:
            self._kill(by_rank[self.retired])
            self.retired += 1

    def _consume(self, victims: list[Running]) -> None:
        for victim in victims:
            self._kill(self.position[victim.id])

    def _refresh(self) -> None:
        """Re-check readiness of agents whose slots changed since the last request."""
        dirty = self.state.dirty
        if not dirty:
            return
        soon = self.state.soon.count
        for tracker in self.trackers.values():
            acc = tracker.acc
            for agent_id in dirty:
                if soon(agent_id) + acc.get(agent_id, 0) >= tracker.need and self.state.offers(
                    agent_id, tracker.label
                ):
                    tracker.ready.add(agent_id)
                else:
                    tracker.ready.discard(agent_id)
        dirty.clear()
