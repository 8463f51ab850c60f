"""A Determined Core API script trained with PyTorch DistributedDataParallel (gloo, so it runs
on CPU slots), started by Determined's torch launcher:

    entrypoint: python3 -m determined.launch.torch_distributed python3 ddp.py

The launcher starts one process per slot of each node; ``torch.distributed`` meets at the
rendezvous it sets up, and ``DistributedContext.from_torch_distributed()`` gives the Core API
the same ranks. A small regression model learns ``y = sum(x)`` from random batches, each rank
its own; DDP averages the gradients, so every rank ends with the same parameters, which each
prints as ``digest HEX at step S``. Only the chief checkpoints and reports.
"""

from __future__ import annotations

import hashlib
import logging

import determined as det
import torch
import torch.distributed as dist
from determined import core
from torch.nn.parallel import DistributedDataParallel


def digest(model: torch.nn.Module) -> str:
    values = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def main(core_context: core.Context) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    info = det.get_cluster_info()
    hparams = info.trial.hparams if info and info.trial else {}
    every = int(hparams.get("checkpoint_every", 4))
    print(f"rank {rank} of {world}; allgather {core_context.distributed.allgather(rank)}")
    torch.manual_seed(rank)  # different on purpose: DDP starts every rank from rank 0's
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    steps = 0
    if info is not None and info.latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(info.latest_checkpoint) as path:
            state = torch.load(path / "model.pt")
        model.load_state_dict(state["model"])
        steps = int(state["steps"])
    print(f"started at step {steps} world {world}", flush=True)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=float(hparams.get("learning_rate", 0.05)))
    data = torch.Generator().manual_seed(1000 + 100 * steps + rank)

    def checkpoint() -> None:
        if rank == 0:  # the model is the same on every rank
            with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                torch.save({"model": model.state_dict(), "steps": steps}, path / "model.pt")

    for op in core_context.searcher.operations():
        while steps < op.length:
            x = torch.randn(16, 4, generator=data)
            loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if rank == 0:
                core_context.train.report_training_metrics(steps, {"loss": loss.item()})
            if steps % every == 0:
                checkpoint()
            if core_context.preempt.should_preempt():
                checkpoint()
                print(f"preempted at step {steps}", flush=True)
                return
            if rank == 0:
                op.report_progress(steps)
        if rank == 0:
            core_context.train.report_validation_metrics(steps, {"loss": loss.item()})
            op.report_completed(loss.item())
    print(f"digest {digest(model)} at step {steps}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    dist.init_process_group("gloo")
    try:
        distributed = det.core.DistributedContext.from_torch_distributed()
        with det.core.init(distributed=distributed) as core_context:
            main(core_context)
    finally:
        dist.destroy_process_group()
