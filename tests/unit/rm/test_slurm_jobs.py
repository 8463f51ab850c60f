"""What a Slurm pool asks of Slurm: its nodes' slots, and each job's sbatch options."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import SlurmPoolConfig
from assay.protocol import ClusterInfo, Hello, Slot, Start, TrialInfo
from assay.rm._slurm import SlurmManager, SlurmPool, _Job, _Member
from assay.rm._slurm_commands import gpus_in


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("(null)", 0),
        ("gpu:2", 2),
        ("gpu:a100:4(S:0-1)", 4),
        ("gpu:a100:2,gpu:t4:1", 3),
        ("mps:100,gpu:1", 1),
    ],
)
def test_gpus_are_counted_from_every_gres_form_sinfo_prints(gres: str, gpus: int) -> None:
    assert gpus_in(gres) == gpus


def manager(tmp_path: Path, **settings: object) -> SlurmManager:
    return SlurmManager(
        SlurmPool(
            name="hpc",
            settings=SlurmPoolConfig.model_validate(settings),
            work_dir=tmp_path,
            master_url="http://master:8080",
            agent_token="t",
        )
    )


def test_slots_are_gpus_where_nodes_have_them_else_cpus_unless_the_pool_says(
    tmp_path: Path,
) -> None:
    assert [s.type for s in manager(tmp_path)._slots(cpus=8, gpus=2)] == ["cuda", "cuda"]
    assert len(manager(tmp_path)._slots(cpus=8, gpus=0)) == 8
    forced = manager(tmp_path, slot_type="cpu", slots_per_node=3)._slots(cpus=8, gpus=2)
    assert [s.type for s in forced] == ["cpu"] * 3


def start(slots: int, experiment: dict[str, object] | None = None) -> Start:
    trial = TrialInfo(
        trial_id=4,
        experiment_id=2,
        trial_seed=1,
        hparams={},
        config={"slurm": experiment} if experiment is not None else {},
        steps_completed=0,
        trial_run_id=1,
    )
    return Start(
        allocation_id="4.1",
        trial_id=4,
        experiment_id=2,
        run=1,
        context=None,
        entrypoint="python3 train.py",
        env={},
        slots=[str(i) for i in range(slots)],
        cluster_info=ClusterInfo(
            master_url="",
            cluster_id="c",
            agent_id="hpc.gpu7",
            slot_ids=[],
            task_id="4",
            allocation_id="4.1",
            session_token="",
            task_type="TRIAL",
            latest_checkpoint=None,
            trial=trial,
        ),
    )


def sbatch_args(manager: SlurmManager, message: Start, kind: str) -> list[str]:
    manager.nodes["hpc.gpu7"] = Hello(agent_id="hpc.gpu7", slots=[Slot("0", type=kind)])
    job = _Job(alloc_id="4.1", dir=Path("/shared/jobs/4.1"))
    job.members["hpc.gpu7"] = _Member("hpc.gpu7", "gpu7", 4)
    job.starts["hpc.gpu7"] = message
    return manager._sbatch_args(job)


def test_a_gpu_job_asks_for_its_slots_as_gres_with_the_pools_and_experiments_options(
    tmp_path: Path,
) -> None:
    pool = manager(
        tmp_path, partition="gpu", qos="high", account="ml", sbatch_args=["--time=1:00:00"]
    )
    args = sbatch_args(pool, start(2, {"sbatch_args": ["--mem=16G"], "gpu_type": "a100"}), "cuda")
    assert "--nodelist=gpu7" in args and "--nodes=1" in args
    assert {"--partition=gpu", "--qos=high", "--account=ml"} <= set(args)
    assert "--gres=gpu:a100:2" in args
    # The experiment's options come last, so they win over the pool's.
    assert args[-2:] == ["--time=1:00:00", "--mem=16G"]
    assert "--job-name=assay-4.1" in args


def test_a_cpu_job_asks_for_its_slots_as_cpus_and_at_least_one(tmp_path: Path) -> None:
    assert "--cpus-per-task=3" in sbatch_args(manager(tmp_path), start(3), "cpu")
    assert "--cpus-per-task=1" in sbatch_args(manager(tmp_path), start(0), "cpu")
    assert not any(a.startswith("--gres") for a in sbatch_args(manager(tmp_path), start(1), "cpu"))
