"""``determined.pytorch`` outside a cluster, imported as a trial imports it: native AMP
(``wrap_scaler`` with autocast), LR scheduler step modes, the apex refusal, and loading a
checkpoint Determined 0.21.0 wrote with ``load_trial_from_checkpoint_path``."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.unit.compat.test_determined_shim import run_trial_code

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)

DETERMINED_CHECKPOINT = (
    Path(__file__).resolve().parents[2] / "integration" / "contexts" / "pytorch_trial"
)

TRIAL = """
import torch
from torch import nn
from determined import pytorch

class Ones(torch.utils.data.Dataset):
    def __len__(self): return 16
    def __getitem__(self, i): return torch.tensor([1.0]), torch.tensor([1.0])

class T(pytorch.PyTorchTrial):
    def __init__(self, context, amp=False, mode=None):
        self.context = context
        self.scaler = context.wrap_scaler(torch.amp.GradScaler("cpu")) if amp else None
        m = nn.Linear(1, 1, bias=False); m.weight.data.fill_(0.0)
        self.model = context.wrap_model(m)
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
        self.amp = amp
        if mode is not None:
            self.sched = context.wrap_lr_scheduler(
                torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5), mode
            )
    def build_training_data_loader(self): return pytorch.DataLoader(Ones(), batch_size=4)
    def build_validation_data_loader(self): return pytorch.DataLoader(Ones(), batch_size=4)
    def train_batch(self, batch, epoch_idx, batch_idx):
        x, y = batch
        if self.amp:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = self.model(x)
            loss = nn.functional.mse_loss(out.float(), y)
            self.context.backward(self.scaler.scale(loss))
            self.context.step_optimizer(self.opt, scaler=self.scaler)
            self.scaler.update()
        else:
            loss = nn.functional.mse_loss(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
        return {"loss": loss, "lr": self.opt.param_groups[0]["lr"]}
    def evaluate_batch(self, batch, batch_idx):
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}

def fit(length, **kwargs):
    with pytorch.init(hparams={}) as context:
        trial = T(context, **kwargs)
        pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(length))
        return trial
"""


def test_native_amp_trains_through_the_wrapped_scaler_and_saves_it(tmp_path: Path) -> None:
    done = run_trial_code(
        TRIAL
        + "t = fit(6, amp=True)\n"
        + "print('weight', round(t.model.weight.item(), 2))\n"
        + "import glob\n"
        + "c = torch.load(sorted(glob.glob('ckpt/*/state_dict.pth'))[-1], weights_only=False)\n"
        + "print('scaler saved', 'scaler_state_dict' in c)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    weight = float(done.stdout.split("weight ")[1].split()[0])
    assert 0.6 < weight < 0.8, "six SGD steps toward 1 at lr 0.1 (bfloat16 forward)"
    assert "scaler saved True" in done.stdout


@pytest.mark.parametrize(
    ("mode", "lr_after"),
    [
        ("STEP_EVERY_BATCH", 0.1 * 0.5**8),
        ("STEP_EVERY_EPOCH", 0.1 * 0.5**2),
        ("MANUAL_STEP", 0.1),
    ],
)
def test_an_lr_scheduler_is_stepped_as_its_step_mode_says(
    tmp_path: Path, mode: str, lr_after: float
) -> None:
    done = run_trial_code(
        TRIAL
        + f"t = fit(8, mode=pytorch.LRScheduler.StepMode.{mode})\n"
        + "print('lr', repr(t.opt.param_groups[0]['lr']))\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # 8 batches of 4 records: 2 epochs of 16.
    assert float(done.stdout.split("lr ")[1].split()[0]) == pytest.approx(lr_after)


def test_configure_apex_amp_is_refused_in_one_line_without_apex(tmp_path: Path) -> None:
    if importlib.util.find_spec("apex") is not None:
        pytest.skip("apex is installed")
    done = run_trial_code(
        TRIAL
        + "with pytorch.init(hparams={}) as c:\n"
        + "    t = T(c)\n"
        + "    try:\n"
        + "        c.configure_apex_amp(t.model, t.opt)\n"
        + "    except pytorch.InvalidExperimentException as e:\n"
        + "        print('refused:', e)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("refused:")]
    assert "needs NVIDIA apex" in line and "wrap_scaler" in line


def test_a_checkpoint_determined_wrote_loads_with_its_trial_class(tmp_path: Path) -> None:
    ckpt = tmp_path / "determined-ckpt"
    shutil.copytree(DETERMINED_CHECKPOINT / "determined-0.21.0", ckpt)
    # The trial class the checkpoint names (model_def:OneVarPytorchTrial), written here.
    (ckpt / "code").mkdir()
    (ckpt / "code" / "model_def.py").write_text(
        "import torch\nfrom torch import nn\nfrom determined import pytorch\n"
        "class OneVarPytorchTrial(pytorch.PyTorchTrial):\n"
        "    def __init__(self, context, lr):\n"
        "        self.context = context\n"
        "        self.model = context.wrap_model(nn.Linear(1, 1, False))\n"
        "        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr))\n"
        "    def train_batch(self, batch, epoch_idx, batch_idx): pass\n"
        "    def build_training_data_loader(self): pass\n"
        "    def build_validation_data_loader(self): pass\n"
        "    def evaluate_batch(self, batch, batch_idx): pass\n"
    )
    done = run_trial_code(
        "from determined import pytorch\n"
        f"t = pytorch.load_trial_from_checkpoint_path({str(ckpt)!r}, trial_kwargs={{'lr': 0.1}})\n"
        "print('weight', t.model.weight.item())\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.split("weight ")[1].split()[0]) == pytest.approx(0.002, abs=1e-8)


def test_profiling_asked_for_is_said_not_to_happen_and_training_goes_on(tmp_path: Path) -> None:
    done = run_trial_code(
        TRIAL
        + "with pytorch.init(hparams={}) as c:\n"
        + "    t = T(c)\n"
        + "    c.set_profiler(activities=[])\n"
        + "    pytorch.Trainer(t, c).fit(max_length=pytorch.Batch(2), profiling_enabled=True)\n"
        + "    print('trained', float(t.model.weight))\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "context.set_profiler(): assay collects no profiles" in said
    assert "fit(profiling_enabled=True): assay collects no profiles" in said
    assert "trained" in done.stdout
