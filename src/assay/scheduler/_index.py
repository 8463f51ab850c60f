"""The slots a scheduling pass can still hand out, indexed so one placement costs O(slot count).

A pass keeps two views of every enabled agent: the slots free *now*, and the slots free *soon*
(free now, plus those held by allocations that were told to give them back). Each view buckets
agents by how many slots they offer, so best and worst fit read one bucket instead of scanning
every agent, and gangs read the list of fully free agents of each size. The placements chosen
are exactly those of :func:`assay.scheduler.fit` on the same free slots (tests hold it to that).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Mapping, Sequence

from assay.scheduler._model import Agent, Fitting, Placement, Request


class _View:
    """Agents of one label (or all agents) bucketed by how many slots they offer."""

    __slots__ = ("by_count", "full", "sizes")

    def __init__(self, top: int) -> None:
        # by_count[c]: sorted ids of agents offering exactly c slots (c >= 1).
        self.by_count: list[list[str]] = [[] for _ in range(top + 1)]
        # full[size]: sorted ids of agents of that size offering every one of their slots.
        self.full: dict[int, list[str]] = {}
        # Every agent size present in the view, largest first.
        self.sizes: tuple[int, ...] = ()


class CountIndex:
    """Buckets of agents by offered slot count, for all agents and per label."""

    def __init__(
        self,
        size: Mapping[str, int],
        labels: Mapping[str, frozenset[str]],
        counts: dict[str, int],
    ) -> None:
        self._size = size
        self._labels = labels
        self._counts = counts
        self._top = max(size.values(), default=0)
        self._views: dict[str | None, _View] = {}

    def count(self, agent_id: str) -> int:
        return self._counts.get(agent_id, 0)

    def view(self, label: str | None) -> _View:
        view = self._views.get(label)
        if view is None:
            view = self._build(label)
            self._views[label] = view
        return view

    def _build(self, label: str | None) -> _View:
        view = _View(self._top)
        sizes: set[int] = set()
        for agent_id in sorted(self._size):
            if label is not None and label not in self._labels[agent_id]:
                continue
            size = self._size[agent_id]
            sizes.add(size)
            view.full.setdefault(size, [])
            count = self._counts.get(agent_id, 0)
            if count:
                view.by_count[count].append(agent_id)
            if count == size:
                view.full[size].append(agent_id)
        view.sizes = tuple(sorted(sizes, reverse=True))
        return view

    def set_count(self, agent_id: str, new: int) -> None:
        old = self._counts.get(agent_id, 0)
        if old == new:
            return
        self._counts[agent_id] = new
        size = self._size[agent_id]
        labels = self._labels[agent_id]
        for label, view in self._views.items():
            if label is not None and label not in labels:
                continue
            if old:
                bucket = view.by_count[old]
                del bucket[bisect_left(bucket, agent_id)]
            if new:
                insort(view.by_count[new], agent_id)
            if old == size:
                full = view.full[size]
                del full[bisect_left(full, agent_id)]
            elif new == size:
                insort(view.full[size], agent_id)

    def find(self, req: Request, fitting: Fitting) -> list[str] | None:
        """The agents :func:`assay.scheduler.fit` would pick for ``req``: one, or a gang."""
        view = self.view(req.label)
        need = req.slots
        buckets = view.by_count
        top = len(buckets) - 1
        if need <= top:
            counts = range(need, top + 1) if fitting is Fitting.BEST else range(top, need - 1, -1)
            for count in counts:
                bucket = buckets[count]
                if bucket:
                    return [bucket[0]]
        if req.is_single_node:
            return None
        for size in view.sizes:
            if size >= need or need % size:
                continue
            full = view.full[size]
            if len(full) >= need // size:
                return full[: need // size]
        return None


class PoolState:
    """Free and soon-free slots of one pool during one pass; placements are taken out of it."""

    def __init__(self, agents: Sequence[Agent], fitting: Fitting) -> None:
        self.fitting = fitting
        self.slots: dict[str, tuple[str, ...]] = {}
        self.labels: dict[str, frozenset[str]] = {}
        self.size: dict[str, int] = {}
        self.avail: dict[str, list[str]] = {}
        self.coming: dict[str, list[str]] = {}
        for agent in agents:
            # Disabled agents take nothing new, so their slots are not offered at all.
            if not agent.enabled or not agent.slots:
                continue
            self.slots[agent.id] = tuple(sorted(agent.slots))
            self.labels[agent.id] = agent.labels
            self.size[agent.id] = len(agent.slots)
            self.avail[agent.id] = sorted(agent.free)
        now_counts = {a: len(s) for a, s in self.avail.items()}
        self.now = CountIndex(self.size, self.labels, now_counts)
        self.soon = CountIndex(self.size, self.labels, dict(now_counts))
        self.free_now = sum(now_counts.values())
        self.free_soon = self.free_now
        self.dirty: set[str] = set()
        """Agents whose soon-free count changed since a watcher last cleared this set."""

    def offers(self, agent_id: str, label: str | None) -> bool:
        """Whether ``agent_id`` can take work with ``label`` at all."""
        labels = self.labels.get(agent_id)
        return labels is not None and (label is None or label in labels)

    def add_coming(self, assignment: Mapping[str, Iterable[str]]) -> None:
        """Slots an allocation is giving back: usable by waiting requests once it exits."""
        for agent_id, slot_ids in assignment.items():
            if agent_id not in self.size:
                continue
            coming = self.coming.setdefault(agent_id, [])
            before = len(coming)
            # Unsorted: every reader sorts the slots it picks from.
            coming.extend(slot_ids)
            self.free_soon += len(coming) - before
            self.soon.set_count(agent_id, len(self.avail[agent_id]) + len(coming))
            self.dirty.add(agent_id)

    def fit_now(self, req: Request) -> Placement | None:
        if req.slots > self.free_now:
            return None
        chosen = self.now.find(req, self.fitting)
        if chosen is None:
            return None
        if len(chosen) == 1:
            agent_id = chosen[0]
            return {agent_id: tuple(self.avail[agent_id][: req.slots])}
        return {agent_id: self.slots[agent_id] for agent_id in chosen}

    def fit_soon(self, req: Request) -> Placement | None:
        """Placement on slots free now or held by allocations already giving them back."""
        if req.slots > self.free_soon:
            return None
        chosen = self.soon.find(req, self.fitting)
        if chosen is None:
            return None
        if len(chosen) == 1:
            agent_id = chosen[0]
            both = sorted([*self.avail[agent_id], *self.coming.get(agent_id, ())])
            return {agent_id: tuple(both[: req.slots])}
        return {agent_id: self.slots[agent_id] for agent_id in chosen}

    def fit_with(self, req: Request, extra: Mapping[str, Sequence[str]]) -> Placement | None:
        """Placement on the soon-free slots plus ``extra`` (slots of victims to be preempted).

        Only valid when :meth:`fit_soon` found nothing: then no agent outside ``extra`` can take
        the request alone, so only those agents need looking at.
        """
        need = req.slots
        sign = 1 if self.fitting is Fitting.BEST else -1
        best: tuple[int, str] | None = None
        newly_full: dict[int, list[str]] = {}
        for agent_id, slot_ids in extra.items():
            if not self.offers(agent_id, req.label):
                continue
            total = self.soon.count(agent_id) + len(slot_ids)
            if total >= need:
                key = (sign * total, agent_id)
                if best is None or key < best:
                    best = key
            size = self.size[agent_id]
            if total == size and self.soon.count(agent_id) < size:
                newly_full.setdefault(size, []).append(agent_id)
        if best is not None:
            agent_id = best[1]
            pool = sorted([*self.avail[agent_id], *self.coming.get(agent_id, ()), *extra[agent_id]])
            return {agent_id: tuple(pool[:need])}
        if req.is_single_node:
            return None
        view = self.soon.view(req.label)
        for size in view.sizes:
            if size >= need or need % size:
                continue
            full = view.full[size]
            more = newly_full.get(size, [])
            if len(full) + len(more) >= need // size:
                chosen = sorted([*full[: need // size], *more])[: need // size]
                return {agent_id: self.slots[agent_id] for agent_id in chosen}
        return None

    def take(self, placement: Placement) -> None:
        """Remove the placement's slots from what later requests of this pass may use."""
        for agent_id, slot_ids in placement.items():
            taken = set(slot_ids)
            avail = self.avail[agent_id]
            before_now = len(avail)
            avail[:] = [s for s in avail if s not in taken]
            self.free_now -= before_now - len(avail)
            coming = self.coming.get(agent_id)
            before_soon = before_now + (len(coming) if coming else 0)
            if coming:
                coming[:] = [s for s in coming if s not in taken]
            after_soon = len(avail) + (len(coming) if coming else 0)
            self.free_soon -= before_soon - after_soon
            self.now.set_count(agent_id, len(avail))
            self.soon.set_count(agent_id, after_soon)
            self.dirty.add(agent_id)
