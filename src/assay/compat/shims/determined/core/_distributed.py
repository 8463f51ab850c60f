"""``det.core.DistributedContext``: assay's, with Determined's other constructors."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from assay.core import DistributedContext as _AssayDistributedContext


class DistributedContext(_AssayDistributedContext):
    """A process's place among a trial's ranks, and collectives between them
    (:class:`assay.core.DistributedContext`), built also from Horovod or DeepSpeed."""

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """Ranks as Horovod (``hvd``, initialised) numbers them."""
        size = int(hvd.size())
        local_size = int(hvd.local_size())
        return cls(
            rank=int(hvd.rank()),
            size=size,
            local_rank=int(hvd.local_rank()),
            local_size=local_size,
            cross_rank=int(hvd.cross_rank()),
            cross_size=int(hvd.cross_size()),
            chief_ip=chief_ip or os.environ.get("MASTER_ADDR"),
        )

    @classmethod
    def from_deepspeed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from the variables DeepSpeed's launcher sets (torchrun's names)."""
        if importlib.util.find_spec("deepspeed") is None:
            raise ImportError(
                "DistributedContext.from_deepspeed() needs deepspeed, which this trial's "
                "environment does not have (pip install deepspeed)"
            )
        return cls._from_env(chief_ip)

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from the variables ``torchrun`` (and assay's launchers) set."""
        return cls._from_env(chief_ip)

    @classmethod
    def _from_env(cls, chief_ip: str | None) -> DistributedContext:
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1"))
        local_size = int(env.get("LOCAL_WORLD_SIZE", env.get("LOCAL_SIZE", "1")))
        return cls(
            rank=int(env.get("RANK", "0")),
            size=size,
            local_rank=int(env.get("LOCAL_RANK", "0")),
            local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK", env.get("CROSS_RANK", "0"))),
            cross_size=max(1, size // max(1, local_size)),
            chief_ip=chief_ip or env.get("MASTER_ADDR"),
        )


class DummyDistributedContext(DistributedContext):
    """The context of a process that is the whole trial: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
