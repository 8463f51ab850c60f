"""``ctx.distributed``: rank, size, and collective helpers (single process for now)."""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")


class DistributedContext:
    """The process's place in a distributed trial.

    With ``size == 1`` every collective is the identity (``allgather(x) == [x]``). Multi-process
    collectives need the cluster's rendezvous and raise until they are wired to it.
    """

    def __init__(
        self,
        *,
        rank: int = 0,
        size: int = 1,
        local_rank: int = 0,
        local_size: int = 1,
        cross_rank: int = 0,
        cross_size: int = 1,
        chief_ip: str | None = None,
    ) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"rank must be in [0, {size}), got {rank}")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self.chief_ip = chief_ip

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from the variables ``torchrun`` (and assay's launcher) set."""
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1"))
        local_size = int(env.get("LOCAL_WORLD_SIZE", "1"))
        return cls(
            rank=int(env.get("RANK", "0")),
            size=size,
            local_rank=int(env.get("LOCAL_RANK", "0")),
            local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK", env.get("CROSS_RANK", "0"))),
            cross_size=max(1, size // max(1, local_size)),
            chief_ip=chief_ip or env.get("MASTER_ADDR"),
        )

    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return self.size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def _single(self, what: str) -> None:
        if self.size != 1:
            raise NotImplementedError(
                f"{what} across {self.size} processes needs a process group; use "
                "torch.distributed collectives directly"
            )

    def allgather(self, stuff: T) -> list[T]:
        self._single("allgather")
        return [stuff]

    def gather(self, stuff: T) -> list[T] | None:
        self._single("gather")
        return [stuff]

    def broadcast(self, stuff: T) -> T:
        self._single("broadcast")
        return stuff

    def allgather_local(self, stuff: T) -> list[T]:
        self._single("allgather_local")
        return [stuff]

    def gather_local(self, stuff: T) -> list[T] | None:
        self._single("gather_local")
        return [stuff]

    def broadcast_local(self, stuff: T) -> T:
        self._single("broadcast_local")
        return stuff

    def close(self) -> None:
        return None
