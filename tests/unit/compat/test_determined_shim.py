"""assay's ``determined`` package, imported as a trial imports it (the shims first on
``PYTHONPATH``): Determined's Core API names, off-cluster runs, precedence over an installed
``determined``, and the one line the trial log gets."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.compat import SHIMS_DIR, trial_pythonpath

SRC = Path(__file__).resolve().parents[3] / "src"
ANNOUNCE = "assay: 'import determined' uses assay's Determined-compatible Core API"


def run_trial_code(code: str, cwd: Path, extra_path: str = "") -> subprocess.CompletedProcess[str]:
    path = trial_pythonpath(":".join(p for p in (str(SRC), extra_path) if p))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update({"PYTHONPATH": path, "ASSAY_CHECKPOINT_DIR": str(cwd / "ckpt")})
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_core_api_runs_off_cluster_under_determineds_names(tmp_path: Path) -> None:
    code = """
        import determined as det
        from determined import core
        assert det.get_cluster_info() is None
        assert det.LOG_FORMAT and issubclass(det.InvalidHP, Exception)
        assert core.PreemptMode.ChiefOnly and core.EarlyExitReason.INVALID_HP
        assert core.DownloadMode.NoSharedDownload and core.TensorboardMode.AUTO
        with det.core.init() as ctx:
            assert isinstance(ctx.distributed, det.core.DistributedContext)
            for op in ctx.searcher.operations():
                ctx.train.report_training_metrics(op.length, {"loss": 0.5})
                with ctx.checkpoint.store_path({"steps_completed": op.length}) as (path, uuid):
                    (path / "w.txt").write_text("7")
                op.report_completed(0.5)
            with ctx.checkpoint.restore_path(uuid) as path:
                print("restored", (path / "w.txt").read_text())
            assert isinstance(ctx.checkpoint.get_metadata(uuid), dict)
            assert not ctx.preempt.should_preempt()
    """
    done = run_trial_code(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "restored 7" in done.stdout


def test_invalid_hp_raised_as_det_invalid_hp_ends_the_context_cleanly(tmp_path: Path) -> None:
    code = """
        import determined as det
        with det.core.init():
            raise det.InvalidHP("lr too large")
        print("after")
    """
    done = run_trial_code(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "after" in done.stdout


def test_it_wins_over_an_installed_determined_and_says_so_once(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "determined").mkdir(parents=True)
    (site / "determined" / "__init__.py").write_text("raise ImportError('the upstream one')\n")
    meta = site / "determined-0.30.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: determined\nVersion: 0.30.0\n")
    code = """
        import subprocess, sys
        import determined
        assert determined.core.init
        # A process it starts (a launcher's worker) imports it again without a second line.
        subprocess.run([sys.executable, "-c", "import determined"], check=True)
    """
    done = run_trial_code(code, tmp_path, extra_path=str(site))
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("assay: 'import determined'")]
    assert lines == [f"{ANNOUNCE} (it takes precedence over the installed determined 0.30.0)"], (
        done.stderr
    )


def test_the_shims_directory_holds_determined_and_its_launchers() -> None:
    for module in ("torch_distributed", "deepspeed", "horovod", "tensorflow", "wrap_rank"):
        assert (SHIMS_DIR / "determined" / "launch" / f"{module}.py").is_file()


class FakeHorovod:
    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1

    def local_rank(self) -> int:
        return 0

    def local_size(self) -> int:
        return 1

    def cross_rank(self) -> int:
        return 0

    def cross_size(self) -> int:
        return 1


def test_distributed_contexts_from_horovod_deepspeed_and_the_dummy(tmp_path: Path) -> None:
    sys.path.insert(0, str(SHIMS_DIR))
    try:
        from determined.core import DistributedContext, DummyDistributedContext

        hvd = DistributedContext.from_horovod(FakeHorovod())
        assert (hvd.rank, hvd.size, hvd.cross_size) == (0, 1, 1)
        dummy = DummyDistributedContext()
        assert (dummy.rank, dummy.size) == (0, 1)
        assert dummy.allgather("x") == ["x"]
        import importlib.util

        if importlib.util.find_spec("deepspeed") is None:
            with pytest.raises(ImportError, match="needs deepspeed"):
                DistributedContext.from_deepspeed()
    finally:
        sys.path.remove(str(SHIMS_DIR))
