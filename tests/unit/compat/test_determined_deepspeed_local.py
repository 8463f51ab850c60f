"""``determined.pytorch.deepspeed`` outside a cluster, imported as a trial imports it: the one
line a trial without DeepSpeed gets, ``overwrite_deepspeed_config``, the context's refusals,
and the Trainer training a one-weight engine locally and resuming it from its DeepSpeed
checkpoint to the weight an uninterrupted run reaches."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.compat import trial_pythonpath
from assay.protocol import failure_line

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

SRC = Path(__file__).resolve().parents[3] / "src"


def run_code(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(
        {"PYTHONPATH": trial_pythonpath(str(SRC)), "ASSAY_CHECKPOINT_DIR": str(cwd / "ckpt")}
    )
    # The interpreter's own bin first, as an agent gives a trial: DeepSpeed's op is then built
    # with the same ninja as in trials (two ninjas' builds each look stale to the other).
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR"):
        env.pop(name, None)
    # DeepSpeed compiles a small communication op with g++ the first time: minutes on a
    # busy machine.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_deepspeed_the_import_ends_the_trial_in_one_line(tmp_path: Path) -> None:
    done = run_code(
        """
        import sys
        sys.modules["deepspeed"] = None  # what find_spec reports for a missing package
        import determined.pytorch.deepspeed
        """,
        tmp_path,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if "deepspeed" in ln.lower()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(failure_line("")), lines
    assert "needs DeepSpeed" in lines[0] and "pip install deepspeed" in lines[0]
    assert "Traceback" not in done.stderr


TRIAL = """
import json
import torch
import deepspeed
from torch import nn
from determined import pytorch
from determined.pytorch import deepspeed as det_ds

class Ones(torch.utils.data.Dataset):
    def __len__(self): return 16
    def __getitem__(self, i): return torch.tensor([1.0]), torch.tensor([1.0])

CONFIG = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2,
    "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.5}},
    "gradient_clipping": 0.0,
    "steps_per_print": 10**6,
}

class T(det_ds.DeepSpeedTrial):
    def __init__(self, context, plain_loader=False):
        self.context = context
        self.plain_loader = plain_loader
        m = nn.Linear(1, 1, bias=False); m.weight.data.fill_(0.0)
        self.linear = m
        engine, _, _, _ = deepspeed.initialize(
            model=m, model_parameters=m.parameters(), config=CONFIG
        )
        self.engine = context.wrap_model_engine(engine)
    def build_training_data_loader(self):
        if self.plain_loader:
            return torch.utils.data.DataLoader(Ones(), batch_size=2)
        return pytorch.DataLoader(Ones(), batch_size=2)
    def build_validation_data_loader(self):
        return pytorch.DataLoader(Ones(), batch_size=2)
    def train_batch(self, it, epoch_idx, batch_idx):
        x, y = next(it)
        loss = nn.functional.mse_loss(self.engine(x), y)
        self.engine.backward(loss)
        self.engine.step()
        return loss
    def evaluate_batch(self, it, batch_idx):
        x, y = next(it)
        return {"val_loss": nn.functional.mse_loss(self.engine(x), y)}

class Manual(T):
    # Draws a batch's micro batches itself, and validates the whole set on the chief.
    def __init__(self, context):
        super().__init__(context)
        context.disable_auto_grad_accumulation()
    def train_batch(self, it, epoch_idx, batch_idx):
        losses = [super(Manual, self).train_batch(it, epoch_idx, batch_idx) for _ in range(2)]
        return {"loss": sum(losses) / 2}
    evaluate_batch = det_ds.DeepSpeedTrial.evaluate_batch
    def evaluate_full_dataset(self, data_loader):
        records = sum(len(x) for x, _ in data_loader)
        print("full dataset records", records)
        return {"records": records}

def fit(length, cls=T, **kwargs):
    with det_ds.init(hparams={}) as context:
        trial = cls(context)
        det_ds.Trainer(trial, context).fit(max_length=pytorch.Batch(length), **kwargs)
        return trial.linear.weight.item()
"""


def test_the_trainer_trains_locally_and_resumes_from_the_deepspeed_checkpoint(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("deepspeed") is None:
        pytest.skip("deepspeed is not installed")
    (tmp_path / "base.json").write_text('{"a": {"b": 1, "c": 2}, "d": [1]}')
    (tmp_path / "twice.json").write_text('{"a": 1, "a": 2}')
    done = run_code(
        TRIAL
        + """
merged = det_ds.overwrite_deepspeed_config("base.json", {"a": {"c": 3}, "e": 4})
print("merged", json.dumps(merged, sort_keys=True))
try:
    det_ds.overwrite_deepspeed_config("twice.json", {})
except ValueError:
    print("duplicate keys refused")
whole = fit(6, checkpoint_period=pytorch.Batch(3))
import pathlib, pickle
saved = sorted(pathlib.Path("ckpt").iterdir(), key=lambda p: p.stat().st_mtime)
state = lambda p: pickle.loads((p / "trial_state.pkl").read_bytes())
first = next(p for p in saved if state(p)["batches_trained"] == 3)
print("files", sorted(str(f.relative_to(first)) for f in first.rglob("*") if f.is_file()))
resumed = fit(6, latest_checkpoint=first.name)
manual = fit(6, cls=Manual)
print("weights", whole, resumed, manual)
with det_ds.init(hparams={}) as context:
    for call in (lambda: context.get_train_micro_batch_size_per_gpu(),
                 lambda: context.wrap_optimizer(None)):
        try:
            call()
        except pytorch.InvalidExperimentException as e:
            print("refused:", e)
    trial = T(context, plain_loader=True)
    print("geometry", context.get_train_micro_batch_size_per_gpu(),
          context.get_num_micro_batches_per_slot())
    print("mpu", det_ds.make_data_parallel_mpu(context.distributed))
    try:
        det_ds.Trainer(trial, context).fit(max_length=pytorch.Batch(1))
    except pytorch.InvalidExperimentException as e:
        print("refused:", e)
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert 'merged {"a": {"b": 1, "c": 3}, "d": [1], "e": 4}' in out
    assert "duplicate keys refused" in out
    files = out.split("files ")[1].splitlines()[0]
    for name in ("det_state_dict_rank0.pth", "trial_state.pkl", "load_data.json", "latest"):
        assert f"'{name}'" in files, files
    assert "model0/mp_rank_00_model_states.pt" in files
    whole, resumed, manual = (float(v) for v in out.split("weights ")[1].split()[:3])
    assert manual == whole, "train_batch drawing its micro batches itself trains the same"
    assert "full dataset records 16" in out
    # SGD steps (momentum 0.5, lr 0.1) on the gradient 2(w - 1) from w = 0.
    w, buf, after = 0.0, 0.0, []
    for step in range(9):
        grad = 2 * (w - 1)
        buf = grad if step == 0 else buf * 0.5 + grad
        w -= 0.1 * buf
        after.append(w)
    assert whole == pytest.approx(after[5], abs=1e-6)
    # Off a cluster fit() counts its batches from 0 (as Determined's does), so the resumed run
    # trains 6 more; from the weight and momentum of step 3, that is step 9's weight.
    assert resumed == pytest.approx(after[8], abs=1e-6)
    refusals = [ln for ln in out.splitlines() if ln.startswith("refused:")]
    assert len(refusals) == 3, out
    assert "wrap_model_engine" in refusals[0]
    assert "deepspeed.initialize" in refusals[1]
    assert "disable_dataset_reproducibility_checks" in refusals[2]
    assert "geometry 2 2" in out
    assert "data_parallel_world_size=1" in out and "should_build_data_loader=True" in out
