"""Autoscaling decisions for a pool backed by a provider: how many instances to launch and
which to terminate, from the queued demand, the free slots and the instances known."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from assay.errors import InvalidConfig


@dataclass(frozen=True)
class ProviderSettings:
    """A pool's provider limits. Times are seconds."""

    slots_per_instance: int
    min_instances: int = 0
    max_instances: int = 1
    idle_timeout: float = 300.0
    startup_timeout: float = 600.0

    def __post_init__(self) -> None:
        problems = []
        if self.slots_per_instance < 1:
            problems.append(f"slots_per_instance must be at least 1, got {self.slots_per_instance}")
        if self.min_instances < 0:
            problems.append(f"min_instances must be 0 or more, got {self.min_instances}")
        if self.max_instances < self.min_instances:
            problems.append(
                f"max_instances ({self.max_instances}) must be at least min_instances "
                f"({self.min_instances})"
            )
        if self.idle_timeout < 0 or self.startup_timeout < 0:
            problems.append("idle_timeout and startup_timeout must be 0 seconds or more")
        if problems:
            raise InvalidConfig("invalid provider settings: " + "; ".join(problems))


@dataclass(frozen=True)
class Instance:
    """One instance the provider launched. ``agent_id`` is None until its agent connects;
    ``idle_since`` is when its agent last stopped running anything (None while busy)."""

    id: str
    launched_at: float
    agent_id: str | None = None
    idle_since: float | None = None


@dataclass(frozen=True)
class ScalingDecision:
    launch: int = 0
    terminate: tuple[str, ...] = ()


def decide_scaling(
    demand: int,
    free: int,
    settings: ProviderSettings,
    instances: Sequence[Instance],
    now: float,
) -> ScalingDecision:
    """What to launch and terminate now.

    ``demand`` is the slots queued requests of the pool ask for, ``free`` the free slots of its
    connected agents. Instances whose agent never connected within ``startup_timeout`` are
    terminated and count for nothing, so they get replaced. Enough instances are launched to
    cover the demand the free slots and the instances still starting cannot, and to keep
    ``min_instances``, never going over ``max_instances``. Only when nothing is launched are
    instances idle for ``idle_timeout`` terminated, longest idle first, as long as the free
    slots left still cover the demand and ``min_instances`` stay. Busy instances are never
    terminated; when ``max_instances`` was lowered, starting and idle ones go first and the
    busy ones are left to finish.
    """
    spi = settings.slots_per_instance
    terminate: list[str] = []
    alive: list[Instance] = []
    for inst in sorted(instances, key=lambda i: (i.launched_at, i.id)):
        if inst.agent_id is None and now - inst.launched_at >= settings.startup_timeout:
            terminate.append(inst.id)
        else:
            alive.append(inst)

    idle = sorted(
        (i for i in alive if i.agent_id is not None and i.idle_since is not None),
        key=lambda i: (i.idle_since, i.id),
    )
    starting = [i for i in alive if i.agent_id is None]
    if len(alive) > settings.max_instances:
        # Newest starting ones first (least invested), then those idle longest.
        spare = [*reversed(starting), *idle]
        for inst in spare[: len(alive) - settings.max_instances]:
            terminate.append(inst.id)
            if inst.agent_id is not None:
                free = max(0, free - spi)
        gone = set(terminate)
        alive = [i for i in alive if i.id not in gone]
        starting = [i for i in starting if i.id not in gone]
        idle = [i for i in idle if i.id not in gone]

    shortfall = demand - free - len(starting) * spi
    launch = math.ceil(shortfall / spi) if shortfall > 0 else 0
    launch = max(launch, settings.min_instances - len(alive))
    launch = max(0, min(launch, settings.max_instances - len(alive)))
    if launch == 0:
        count = len(alive)
        for inst in idle:
            assert inst.idle_since is not None
            if now - inst.idle_since < settings.idle_timeout:
                break
            if count - 1 < settings.min_instances or free - spi < demand:
                break
            terminate.append(inst.id)
            free -= spi
            count -= 1
    return ScalingDecision(launch=launch, terminate=tuple(terminate))
