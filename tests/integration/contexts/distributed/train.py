"""A distributed test trial: a tiny model trained with DDP (gloo, CPU) on random data.

Every rank trains under ``ctx.searcher.operations()`` on its own random batches; DDP averages
the gradients, so all ranks must end with the same parameters. The chief checkpoints every
``checkpoint_every`` steps. Hyperparameters: ``checkpoint_every``, ``fail_rank`` and
``fail_at`` (that rank exits with code 3 at that step, in the first run only).

Each rank prints ``allgather [...]`` (the ranks ``ctx.distributed.allgather`` returned),
``started at step S run R world W`` and, at the end, ``digest HEX at step S`` (a hash of its
final parameters).
"""

from __future__ import annotations

import hashlib
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import assay


def digest(model: torch.nn.Module) -> str:
    values = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def main() -> None:
    info = assay.get_cluster_info()
    assert info is not None and info.trial is not None
    hp = info.trial.hparams
    every = int(hp.get("checkpoint_every", 5))
    fail_rank = hp.get("fail_rank")
    fail_at = hp.get("fail_at")
    run = info.trial.trial_run_id
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different on purpose: DDP must make every rank start from rank 0's
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    with assay.core.init() as core:
        assert (core.distributed.rank, core.distributed.size) == (rank, world)
        print(f"allgather {core.distributed.allgather(rank)}", flush=True)
        steps = 0
        if info.latest_checkpoint:
            with core.checkpoint.restore_path(info.latest_checkpoint) as path:
                state = torch.load(path / "model.pt")
            model.load_state_dict(state["model"])
            steps = int(state["steps"])
        print(f"started at step {steps} run {run} world {world}", flush=True)
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
        data = torch.Generator().manual_seed(1000 * run + rank)
        loss = torch.zeros(())

        def save() -> None:
            # Only the chief stores the (DDP-synchronised) model.
            if rank == 0:
                with core.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                    torch.save({"model": model.state_dict(), "steps": steps}, path / "model.pt")

        for op in core.searcher.operations():
            while steps < op.length:
                x = torch.randn(16, 4, generator=data)
                loss = ((ddp(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                steps += 1
                core.train.report_training_metrics(steps, {"loss": loss.item()})
                if steps % every == 0:
                    save()
                if rank == fail_rank and steps == fail_at and run == 1:
                    print(f"failing on purpose at step {steps}", flush=True)
                    sys.exit(3)
                if core.preempt.should_preempt():
                    save()
                    print(f"preempted at step {steps}", flush=True)
                    return
            core.train.report_validation_metrics(steps, {"loss": loss.item()})
            op.report_completed(loss.item())
        print(f"digest {digest(model)} at step {steps}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
