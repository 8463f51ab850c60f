"""`assay up` starts its local agent in a pool that agents may join, or none."""

from __future__ import annotations

from assay.cli._cluster import _local_pool
from assay.config import MasterConfig


def config(*pools: dict[str, object], **more: object) -> MasterConfig:
    return MasterConfig.model_validate({"resource_pools": list(pools), **more})


def test_the_local_agent_joins_default_else_the_first_pool_of_agents_else_none() -> None:
    assert _local_pool(MasterConfig()) == "default"
    slurm = {"pool_name": "hpc", "type": "slurm"}
    mixed = config(slurm, {"pool_name": "gpus"}, default_compute_pool="hpc", default_aux_pool="hpc")
    assert _local_pool(mixed) == "gpus"
    only_slurm = config(slurm, default_compute_pool="hpc", default_aux_pool="hpc")
    assert _local_pool(only_slurm) is None
