"""B12: the cost of Determined's PyTorch Trial API on assay: a ``PyTorchTrial`` trained by
``det.pytorch.Trainer`` beside the same model in a plain PyTorch loop, in one process, taking
turns, so both meet the same machine.

The model is a small MLP sized at start so one training step takes about 10 ms on this
machine. Each turn trains the same number of steps from the same data; the Trainer's time is
from its ``on_training_start`` to the end of its last stretch of training (its final
validation and checkpoint are left out: a plain loop has neither), with a training report every
100 batches. It runs outside a cluster (``det.get_cluster_info()`` is None), so reports go to
the log; on a cluster a report is a queued record sent by a background thread (B4).

    .venv/bin/python benchmarks/runtime/bench_b12.py            # writes RESULTS.md
    .venv/bin/python benchmarks/runtime/bench_b12.py --quick    # 1 turn of 40 steps; writes nothing
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks._common import stamp, write_section  # noqa: E402

STEP_TARGET_MS = 10.0
BATCH = 32
FEATURES = 64


def _build(hidden: int):  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 10),
    )  # fmt: skip


def _dataset(steps: int):  # type: ignore[no-untyped-def]
    import torch

    g = torch.Generator().manual_seed(1)
    x = torch.randn(steps * BATCH, FEATURES, generator=g)
    y = torch.randint(0, 10, (steps * BATCH,), generator=g)
    return torch.utils.data.TensorDataset(x, y)


def _plain(hidden: int, steps: int) -> float:
    """Seconds for ``steps`` steps of the model in a plain loop (loss read each step)."""
    import torch
    from torch import nn

    model = _build(hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(_dataset(steps), batch_size=BATCH)
    loss_fn = nn.CrossEntropyLoss()
    batches = iter(loader)  # made before the clock starts, as the Trainer's is
    start = time.perf_counter()
    for x, y in batches:
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
    return time.perf_counter() - start


def _trainer(hidden: int, steps: int, workdir: Path) -> float:
    """Seconds of the Trainer's training loop for the same steps."""
    import torch
    from determined import pytorch
    from torch import nn

    class Clock(pytorch.PyTorchCallback):
        def __init__(self) -> None:
            self.start = 0.0
            self.end = 0.0

        def on_training_start(self) -> None:
            self.start = time.perf_counter()

        def on_training_workload_end(self, avg_metrics: object, batch_metrics: object) -> None:
            self.end = time.perf_counter()

    class Trial(pytorch.PyTorchTrial):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            self.context = context
            self.model = context.wrap_model(_build(hidden))
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.01))
            self.loss_fn = nn.CrossEntropyLoss()
            self.clock = Clock()

        def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
            return {"clock": self.clock}

        def build_training_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(_dataset(steps), batch_size=BATCH)

        def build_validation_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(_dataset(1), batch_size=BATCH)

        def train_batch(self, batch, epoch_idx, batch_idx):  # type: ignore[no-untyped-def]
            x, y = batch
            loss = self.loss_fn(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            return {"loss": loss}

        def evaluate_batch(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            x, y = batch
            return {"val_loss": self.loss_fn(self.model(x), y)}

    os.chdir(workdir)
    with pytorch.init(hparams={}) as context:
        trial = Trial(context)
        pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Batch(steps), reporting_period=pytorch.Batch(100)
        )
    return trial.clock.end - trial.clock.start


def _calibrate() -> int:
    """A hidden size whose plain step takes about ``STEP_TARGET_MS``."""
    hidden = 256
    for _ in range(8):
        per_step = _plain(hidden, 30) / 30 * 1000
        if abs(per_step - STEP_TARGET_MS) < 1.0:
            break
        hidden = max(16, int(hidden * (STEP_TARGET_MS / per_step) ** 0.5))
    return hidden


def child(turns: int, steps: int) -> None:
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    hidden = _calibrate()
    plain, trainer = [], []
    with tempfile.TemporaryDirectory(prefix="b12-") as tmp:
        # One turn of each first, not counted: imports, allocator and caches warm up.
        _plain(hidden, steps)
        _trainer(hidden, steps, Path(tmp))
        for turn in range(turns):
            # Which goes first alternates, so neither always follows the other.
            if turn % 2:
                trainer.append(_trainer(hidden, steps, Path(tmp)))
                plain.append(_plain(hidden, steps))
            else:
                plain.append(_plain(hidden, steps))
                trainer.append(_trainer(hidden, steps, Path(tmp)))
            print(
                f"turn {turn + 1}: plain {plain[-1] / steps * 1000:.2f} ms/step, "
                f"trainer {trainer[-1] / steps * 1000:.2f} ms/step",
                flush=True,
            )
    print(f"RESULT {hidden} {' '.join(map(str, plain))} | {' '.join(map(str, trainer))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="1 turn of 40 steps; write nothing")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    turns, steps = (1, 40) if args.quick else (args.turns, args.steps)
    if args.child:
        child(turns, steps)
        return 0
    from assay.compat import SHIMS_DIR

    # The trial's view: assay's determined package first on the path, as an agent gives it.
    env = {**os.environ, "PYTHONPATH": f"{SHIMS_DIR}:{os.environ.get('PYTHONPATH', '')}"}
    env.pop("ASSAY_CLUSTER_INFO", None)
    argv = [sys.executable, __file__, "--child", "--turns", str(turns), "--steps", str(steps)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        return done.returncode
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    head, tail = line.removeprefix("RESULT ").split(" | ")
    hidden, *plain_s = head.split()
    plain = [float(v) / steps * 1000 for v in plain_s]
    trainer = [float(v) / steps * 1000 for v in tail.split()]
    overheads = [(t - p) / p * 100 for p, t in zip(plain, trainer, strict=True)]
    overall = (statistics.median(trainer) - statistics.median(plain)) / statistics.median(plain)
    print(f"B12 overhead: median of turns {statistics.median(overheads):.2f} %")
    if args.quick:
        return 0
    command = "python benchmarks/runtime/bench_b12.py"
    if (turns, steps) != (30, 100):
        command += f" --turns {turns} --steps {steps}"

    def row(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"

    body = (
        "## B12: PyTorchTrial under the Trainer vs a plain PyTorch loop\n\n"
        + stamp(command)
        + f"- model: MLP {FEATURES}-{hidden}-{hidden}-10 (hidden size calibrated so a plain step "
        f"takes about {STEP_TARGET_MS:.0f} ms), batch {BATCH}, SGD, one torch thread; "
        f"{turns} turns of {steps} steps each, the two loops taking turns in one process "
        "(which goes first alternates; one turn of each first to warm up, not counted); "
        "the Trainer outside a cluster, a training report every 100 batches\n"
        "- target: the Trainer at most 2 % slower per step\n\n"
        "| figure | median over turns (min-max) |\n|---|---|\n"
        f"| plain loop, ms per step | {row(plain)} |\n"
        f"| Trainer, ms per step | {row(trainer)} |\n"
        f"| Trainer overhead per turn, % | {row(overheads)} |\n"
        f"| overhead of the medians, % | {overall * 100:.2f} |\n"
    )
    write_section("B12", body)
    print("wrote the B12 section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
