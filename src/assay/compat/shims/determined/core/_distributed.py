"""``det.core.DistributedContext``: assay's, with Determined's other constructors."""

from __future__ import annotations

import importlib.util
import json
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
    def from_tf_config(cls) -> tuple[DistributedContext, Any]:
        """A context and a ``tf.distribute.Strategy`` for the ``TF_CONFIG`` variable (which
        ``determined.launch.tensorflow`` sets): with several workers, one rank per worker and a
        ``MultiWorkerMirroredStrategy``; with one worker or none, rank 0 of 1 and a
        ``MirroredStrategy`` where there are several GPUs, the default strategy otherwise.
        Only ``worker`` tasks are supported, as in Determined."""
        import tensorflow as tf  # type: ignore[import-untyped]

        raw = os.environ.get("TF_CONFIG")
        if raw:
            workers, index = _tf_config_workers(raw)
            if len(workers) > 1:
                # One process per node: each worker is its node's only rank.
                dist = cls(
                    rank=index,
                    size=len(workers),
                    local_rank=0,
                    local_size=1,
                    cross_rank=index,
                    cross_size=len(workers),
                    chief_ip=_host_of(workers[0]),
                )
                return dist, tf.distribute.MultiWorkerMirroredStrategy()
        dist = cls(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
        several_gpus = len(tf.config.list_physical_devices("GPU")) > 1
        strategy = (
            tf.distribute.MirroredStrategy() if several_gpus else tf.distribute.get_strategy()
        )
        return dist, strategy

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


def _tf_config_workers(raw: str) -> tuple[list[str], int]:
    """The workers' addresses and this process's index among them, from ``TF_CONFIG``."""
    shape = "JSON naming task.type, task.index and cluster.worker (a list of host:port)"
    try:
        config = json.loads(raw)
        task_type = config["task"]["type"]
    except (ValueError, TypeError, KeyError):
        raise ValueError(f"TF_CONFIG must be {shape}, got {raw!r}") from None
    if task_type != "worker":
        raise RuntimeError(
            f"DistributedContext.from_tf_config() only supports the default strategy, "
            f"MirroredStrategy or MultiWorkerMirroredStrategy, but TF_CONFIG has task type "
            f"{task_type!r} where it should be 'worker' ({raw})"
        )
    try:
        index = int(config["task"].get("index", 0))
        workers = [str(w) for w in config["cluster"]["worker"]]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ValueError(f"TF_CONFIG must be {shape}, got {raw!r}") from None
    if not 0 <= index < max(1, len(workers)):
        raise ValueError(f"TF_CONFIG's task.index {index} is not among its {len(workers)} workers")
    return workers, index


def _host_of(address: str) -> str:
    """``host`` of ``host:port`` (``[v6]:port`` too)."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


class DummyDistributedContext(DistributedContext):
    """The context of a process that is the whole trial: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
