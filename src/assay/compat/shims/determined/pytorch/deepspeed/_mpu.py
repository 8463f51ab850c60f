"""How a DeepSpeed trial's ranks are laid out: which of them form the data-parallel group,
which build data loaders and which report metrics (Determined's ``ModelParallelUnit``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from assay.core import DistributedContext


@dataclasses.dataclass
class ModelParallelUnit:
    """A rank's place in the data-parallel group, and whether it builds the data loaders (the
    first and last pipeline stages need data) and reports metrics. Pass one of your own to
    ``context.set_mpu`` for model parallelism outside DeepSpeed's pipeline engine."""

    data_parallel_rank: int
    data_parallel_world_size: int
    should_report_metrics: bool
    should_build_data_loader: bool


def make_data_parallel_mpu(dist_context: DistributedContext) -> ModelParallelUnit:
    """Plain data parallelism: every rank is a data-parallel rank that loads and reports."""
    return ModelParallelUnit(
        data_parallel_rank=dist_context.get_rank(),
        data_parallel_world_size=dist_context.get_size(),
        should_report_metrics=True,
        should_build_data_loader=True,
    )


def make_deepspeed_mpu(topology: Any) -> ModelParallelUnit:
    """The unit of a DeepSpeed ``PipelineParallelGrid`` (a ``PipelineEngine``'s ``mpu``): data
    is loaded by the first slice rank of the first and the last pipeline stage."""
    stage = topology.get_pipe_parallel_rank()
    last_stage = topology.get_pipe_parallel_world_size() - 1
    loads = topology.get_slice_parallel_rank() == 0 and stage in (0, last_stage)
    return ModelParallelUnit(
        data_parallel_rank=topology.get_data_parallel_rank(),
        data_parallel_world_size=topology.get_data_parallel_world_size(),
        should_report_metrics=True,
        should_build_data_loader=loads,
    )
