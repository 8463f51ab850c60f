"""B12: the cost of Determined's PyTorch Trial API on assay: a ``PyTorchTrial`` trained by
``det.pytorch.Trainer`` beside the same model in a plain PyTorch loop, in one process, taking
turns, so both meet the same machine.

The model is a small MLP sized at start so one training step takes about 10 ms on this
machine. Each turn trains the same number of steps from the same data; the Trainer's time is
from its ``on_training_start`` to the end of its last stretch of training (its final
validation and checkpoint are left out: a plain loop has neither), with a training report every
100 batches. It runs outside a cluster (``det.get_cluster_info()`` is None), so reports go to
the log; on a cluster a report is a queued record sent by a background thread (B4).

A shared machine's noise moves single turns by tens of percent, far more than the Trainer
costs, so the Trainer's own cost is also measured apart: the same two loops with a tiny model,
whose step is a fraction of a millisecond, the fastest turn of each compared (noise only adds
time). That cost, in microseconds per step, is what the Trainer adds to any step.

    .venv/bin/python benchmarks/runtime/bench_b12.py            # writes RESULTS.md
    .venv/bin/python benchmarks/runtime/bench_b12.py --quick    # 1 turn of 40 steps; writes nothing
"""

from __future__ import annotations

import argparse
import itertools
import json
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
TINY_HIDDEN = 16
"""The tiny model's hidden size: a step of a fraction of a millisecond."""
TINY_STEPS = 1000
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


def _cycle(starts: list[float]) -> float:
    """The median time from one step's start to the next's: a step with everything around it
    (data, bookkeeping), where a moment the machine took elsewhere moves a few steps only."""
    return statistics.median(b - a for a, b in itertools.pairwise(starts))


def _plain(hidden: int, steps: int) -> tuple[float, float]:
    """Seconds for ``steps`` steps of the model in a plain loop (loss read each step), and
    the median seconds of a step."""
    import torch
    from torch import nn

    model = _build(hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(_dataset(steps), batch_size=BATCH)
    loss_fn = nn.CrossEntropyLoss()
    batches = iter(loader)  # made before the clock starts, as the Trainer's is
    starts: list[float] = []
    start = time.perf_counter()
    for x, y in batches:
        starts.append(time.perf_counter())
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
    return time.perf_counter() - start, _cycle(starts)


def _trainer(hidden: int, steps: int, workdir: Path) -> tuple[float, float]:
    """Seconds of the Trainer's training loop for the same steps, and the median seconds of a
    step (from one ``train_batch`` call to the next)."""
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
            self.starts: list[float] = []

        def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
            return {"clock": self.clock}

        def build_training_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(_dataset(steps), batch_size=BATCH)

        def build_validation_data_loader(self) -> pytorch.DataLoader:
            return pytorch.DataLoader(_dataset(1), batch_size=BATCH)

        def train_batch(self, batch, epoch_idx, batch_idx):  # type: ignore[no-untyped-def]
            self.starts.append(time.perf_counter())
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
    return trial.clock.end - trial.clock.start, _cycle(trial.starts)


def _calibrate() -> int:
    """A hidden size whose plain step takes about ``STEP_TARGET_MS``."""
    hidden = 256
    for _ in range(8):
        per_step = _plain(hidden, 30)[0] / 30 * 1000
        if abs(per_step - STEP_TARGET_MS) < 1.0:
            break
        hidden = max(16, int(hidden * (STEP_TARGET_MS / per_step) ** 0.5))
    return hidden


Turn = tuple[float, float]
"""One loop's turn: its seconds in all, and the median seconds of its steps."""


def _turns(hidden: int, steps: int, turns: int, workdir: Path) -> tuple[list[Turn], list[Turn]]:
    """Each loop's turns, the two taking turns (which goes first alternates, so neither always
    follows the other); one turn of each first to warm up, not counted."""
    _plain(hidden, steps)
    _trainer(hidden, steps, workdir)
    plain: list[Turn] = []
    trainer: list[Turn] = []
    for turn in range(turns):
        if turn % 2:
            trainer.append(_trainer(hidden, steps, workdir))
            plain.append(_plain(hidden, steps))
        else:
            plain.append(_plain(hidden, steps))
            trainer.append(_trainer(hidden, steps, workdir))
        print(
            f"hidden {hidden} turn {turn + 1}: median step plain {plain[-1][1] * 1000:.3f} ms, "
            f"trainer {trainer[-1][1] * 1000:.3f} ms",
            flush=True,
        )
    return plain, trainer


def child(turns: int, steps: int) -> None:
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    hidden = _calibrate()
    with tempfile.TemporaryDirectory(prefix="b12-") as tmp:
        plain, trainer = _turns(hidden, steps, turns, Path(tmp))
        # The same with a tiny model: the Trainer's own cost per step is then most of a step,
        # so its absolute size (microseconds) shows apart from the model's.
        tiny_plain, tiny_trainer = _turns(TINY_HIDDEN, TINY_STEPS, turns, Path(tmp))
    found = {"hidden": hidden, "plain": plain, "trainer": trainer}
    found |= {"tiny_plain": tiny_plain, "tiny_trainer": tiny_trainer}
    print("RESULT " + json.dumps(found))


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
    found = json.loads(line.removeprefix("RESULT "))
    # Milliseconds per step: the median step of each turn, and each turn's whole time per step.
    plain = [cycle * 1000 for _, cycle in found["plain"]]
    trainer = [cycle * 1000 for _, cycle in found["trainer"]]
    plain_whole = [total / steps * 1000 for total, _ in found["plain"]]
    trainer_whole = [total / steps * 1000 for total, _ in found["trainer"]]
    overheads = [(t - p) / p * 100 for p, t in zip(plain, trainer, strict=True)]
    whole = [(t - p) / p * 100 for p, t in zip(plain_whole, trainer_whole, strict=True)]
    tiny_plain = min(total for total, _ in found["tiny_plain"]) / TINY_STEPS * 1000
    tiny_trainer = min(total for total, _ in found["tiny_trainer"]) / TINY_STEPS * 1000
    # Noise only ever adds time, so each loop's fastest turn is its least disturbed one.
    own_us = (tiny_trainer - tiny_plain) * 1000
    own_share = own_us / 1000 / statistics.median(plain) * 100
    print(
        f"B12 overhead: median step {statistics.median(overheads):.2f} %, whole turns "
        f"{statistics.median(whole):.2f} %, the Trainer's own {own_us:.1f} us/step"
    )
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
        + f"- model: MLP {FEATURES}-{found['hidden']}-{found['hidden']}-10 (hidden size "
        f"calibrated so a plain step takes about {STEP_TARGET_MS:.0f} ms), batch {BATCH}, SGD, "
        f"one torch thread; {turns} turns of {steps} steps each, the two loops taking turns in "
        "one process (which goes first alternates; one turn of each first to warm up, not "
        "counted); the Trainer outside a cluster, a training report every 100 batches\n"
        "- a step: from one step's start to the next's (data, the step, and all the loop does "
        "around it); each turn's median step, so that a moment the machine spends elsewhere "
        "moves a few steps, not the turn; a turn's overhead is its Trainer step over its plain "
        "one\n"
        f"- the Trainer's own cost: the same loops with a tiny model (hidden {TINY_HIDDEN}, "
        f"{TINY_STEPS} steps a turn, reports included), the fastest Trainer turn's whole time "
        "less the fastest plain one's (noise only adds time)\n"
        "- target: the Trainer at most 2 % slower per step\n\n"
        "| figure | median over turns (min-max) |\n|---|---|\n"
        f"| plain loop, ms per step | {row(plain)} |\n"
        f"| Trainer, ms per step | {row(trainer)} |\n"
        f"| **Trainer overhead per step, %** | {row(overheads)} |\n"
        f"| whole turns: plain / Trainer, ms per step | {row(plain_whole)} / "
        f"{row(trainer_whole)} |\n"
        f"| whole turns: Trainer overhead, % | {row(whole)} |\n\n"
        f"The Trainer's own cost: {own_us:.1f} us per step ({tiny_plain:.4f} ms a plain tiny "
        f"step, {tiny_trainer:.4f} ms under the Trainer), {own_share:.2f} % of a plain step of "
        "the model above.\n"
    )
    write_section("B12", body)
    print("wrote the B12 section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
