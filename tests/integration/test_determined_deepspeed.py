"""Determined's DeepSpeed Trial API on a real cluster: a one-weight model trained by
DeepSpeed's engine (SGD with momentum from the DeepSpeed config, gradient accumulation over
micro batches), whose weight after every step is known in closed form; trained by the Trainer,
by a legacy ``module:TrialClass`` entrypoint paused and resumed from its DeepSpeed checkpoint,
and on two ranks."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster, wait_for
from tests.integration.trial_runs import final_weights, hooks, merged, run_trial

pytestmark = pytest.mark.integration

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (pip install torch==2.13.0)", allow_module_level=True)
if importlib.util.find_spec("deepspeed") is None:
    pytest.skip(
        "deepspeed is not installed (pip install deepspeed==0.19.8)", allow_module_level=True
    )

import torch  # noqa: E402

CONTEXT = CONTEXTS / "deepspeed_trial"
RECORDS = 64
LR, MOMENTUM = 0.05, 0.5


def weights(steps: int) -> list[float]:
    """The weight before each step and after the last: SGD with momentum on the loss
    (w*1 - 1)^2, whose gradient is 2(w - 1) whatever the batch, in float32 as torch does."""
    w = torch.tensor(0.0, dtype=torch.float32)
    buf: torch.Tensor | None = None
    out = [w.item()]
    for _ in range(steps):
        grad = 2 * (w - 1)
        buf = grad.clone() if buf is None else buf * MOMENTUM + grad
        w = w - LR * buf
        out.append(w.item())
    return out


def index_sum(batch: int, micro: int, steps: int, ranks: int) -> float:
    """The mean, over the micro batches of global batch ``batch`` on every rank, of their
    records' index sums: rank r's m-th micro batch is the loader's batch
    ``(batch * steps + m) * ranks + r``."""
    sums = []
    for rank in range(ranks):
        for m in range(steps):
            start = (((batch * steps + m) * ranks + rank) * micro) % RECORDS
            sums.append(sum(range(start, start + micro)))
    return sum(sums) / len(sums)


def config(micro: int = 4, steps: int = 2, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "deepspeed-trial",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "deepspeed_config": "ds_config.json",
            "overwrite_deepspeed_args": {
                "train_micro_batch_size_per_gpu": micro,
                "gradient_accumulation_steps": steps,
                "optimizer": {"params": {"lr": LR, "momentum": MOMENTUM}},
            },
            "max_batches": 24,
            "validate_every": 8,
            "checkpoint_every": 12,
            "report_every": 4,
        },
        "searcher": {"name": "single", "metric": "val_loss", "smaller_is_better": True},
        "max_restarts": 0,
    }
    return merged(base, overrides)


def check_training(
    cluster: Cluster, tid: int, every: int, length: int, micro: int, steps: int, ranks: int
) -> None:
    expected = weights(length)
    reports = cluster.client.metrics(tid, "training")
    assert [m.steps_completed for m in reports] == list(range(every, length + 1, every))
    for report in reports:
        batches = range(report.steps_completed - every, report.steps_completed)
        values = report.metrics
        # The weight is stepped once a batch: every micro batch of it saw the same weight.
        assert values["loss"] == pytest.approx(
            sum((expected[b] - 1) ** 2 for b in batches) / every, abs=1e-6
        )
        assert values["index_sum"] == pytest.approx(
            sum(index_sum(b, micro, steps, ranks) for b in batches) / every
        )
        assert values["batches_seen"] == every * steps * ranks, "one update per micro batch"


def test_the_trainer_trains_to_the_closed_form_weight_with_deepspeed_checkpoints(
    cluster: Cluster,
) -> None:
    trial = run_trial(cluster, config(), CONTEXT)
    tid = int(trial.id)
    expected = weights(24)
    assert final_weights(cluster, tid)[0] == pytest.approx(expected[24], abs=1e-6)
    check_training(cluster, tid, every=4, length=24, micro=4, steps=2, ranks=1)
    validation = cluster.client.metrics(tid, "validation")
    assert [m.steps_completed for m in validation] == [8, 16, 24]
    for report in validation:
        assert report.metrics["val_loss"] == pytest.approx(
            (expected[report.steps_completed] - 1) ** 2, abs=1e-6
        )
        assert report.metrics["records"] == RECORDS
        # An epoch is 64 records in batches of 2 micro batches of 4.
        assert report.metrics["epochs"] == report.steps_completed // 8
    checkpoints = cluster.client.trial_checkpoints(tid)
    assert [c.steps_completed for c in checkpoints] == [8, 12, 16, 24]
    files = set(checkpoints[-1].resources)
    assert {
        "det_state_dict_rank0.pth",
        "trial_state.pkl",
        "load_data.json",
        "latest",
        "model0/mp_rank_00_model_states.pt",
    } <= files, files
    (events,) = hooks(cluster, tid)
    assert events[:3] == ["startup:0", "training_start", "epoch_start:0"]
    assert events[-1] == "shutdown"
    assert events.count("checkpoint_write") == events.count("checkpoint_upload") == 4


def test_a_legacy_trial_class_paused_resumes_from_its_deepspeed_checkpoint_exactly(
    cluster: Cluster,
) -> None:
    length = 120
    submitted = config(
        entrypoint="onevar_ds:OneVarDeepSpeedTrial",
        hyperparameters={"step_seconds": 0.02},
        searcher={"max_length": {"batches": length}},
        min_validation_period={"batches": 60},
        min_checkpoint_period={"batches": 20},
        scheduling_unit=5,
    )
    exp_id = cluster.submit(yaml.safe_dump(submitted), CONTEXT)
    tid = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id

    def trained() -> int:
        reports = cluster.client.metrics(tid, "training")
        return reports[-1].steps_completed if reports else 0

    wait_for("training", lambda: trained() >= 25, timeout=180)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(tid)).state == "PAUSED" and t
    )
    paused_at = cluster.client.checkpoint(str(paused.latest_checkpoint)).steps_completed
    assert 25 <= paused_at < length, paused_at
    cluster.client.transition(exp_id, "activate")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", cluster.trial_logs(tid)[-60:]
    expected = weights(length)
    assert final_weights(cluster, tid)[0] == pytest.approx(expected[length], abs=1e-6)
    check_training(cluster, tid, every=5, length=length, micro=4, steps=2, ranks=1)
    validation = cluster.client.metrics(tid, "validation")
    assert [m.steps_completed for m in validation] == [60, 120]
    runs = hooks(cluster, tid)
    assert [events[0] for events in runs] == ["startup:0", f"startup:{paused_at}"]
    assert runs[1][1] == "checkpoint_load", "the second run restored the DeepSpeed checkpoint"


@pytest.mark.parametrize(
    "launch",
    [
        # A Trial class of two slots: the master starts it behind torch_distributed.
        {
            "entrypoint": "onevar_ds:OneVarDeepSpeedTrial",
            "searcher": {"max_length": {"batches": 16}},
            "min_validation_period": {"batches": 8},
            "scheduling_unit": 4,
        },
        # A Trainer script behind DeepSpeed's launcher, as Determined's DeepSpeed examples run.
        {
            "entrypoint": "python3 -m determined.launch.deepspeed python3 train.py",
            "hyperparameters": {"max_batches": 16, "checkpoint_every": 16},
        },
    ],
    ids=["trial-class", "launch-deepspeed"],
)
def test_two_deepspeed_ranks_train_as_one_rank_at_the_same_global_batch(
    cluster: Cluster, launch: dict[str, Any]
) -> None:
    # Two ranks of one micro batch of 4 each: the global batch of 8 the one-rank runs train.
    submitted = config(micro=4, steps=1, resources={"slots_per_trial": 2}, **launch)
    trial = run_trial(cluster, submitted, CONTEXT)
    tid = int(trial.id)
    expected = weights(16)
    finals = final_weights(cluster, tid)
    assert sorted(finals) == [0, 1]
    assert finals[0] == pytest.approx(expected[16], abs=1e-6)
    assert finals[1] == finals[0]
    check_training(cluster, tid, every=4, length=16, micro=4, steps=1, ranks=2)
    validation = cluster.client.metrics(tid, "validation")
    assert [m.steps_completed for m in validation] == [8, 16]
    assert [m.metrics["records"] for m in validation] == [RECORDS] * 2, "ranks split the set"
    checkpoints = cluster.client.trial_checkpoints(tid)
    assert [c.steps_completed for c in checkpoints] == [8, 16]
    assert {"det_state_dict_rank0.pth", "det_state_dict_rank1.pth"} <= set(
        checkpoints[-1].resources
    )
