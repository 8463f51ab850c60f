"""``assay e create --local [--test-mode]`` with no cluster running, and the opt-in ``det`` and
``nnictl`` wrappers against a real one."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.cluster import ROOT, Cluster, wait_for
from tests.processes import argvs

pytestmark = pytest.mark.integration

TRAIN = """\
import os

import assay

# The context is packed as the cluster packs it: .detignore'd files never arrive.
assert not os.path.exists("data/big.bin"), "an ignored file was uploaded"
hp = assay.get_cluster_info().trial.hparams


def divide(x):
    return x / 0


with assay.core.init() as core:
    steps = 0
    for op in core.searcher.operations():
        while steps < op.length:
            steps += 1
            core.train.report_training_metrics(steps, {"loss": 1.0 / steps})
        if hp.get("broken"):
            divide(steps)
        with core.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
            (path / "steps").write_text(str(steps))
        score = hp["x"] / steps
        core.train.report_validation_metrics(steps, {"loss": score})
        op.report_completed(score)
    print(f"trained {steps} batches", flush=True)
"""

FULL_LENGTH = 400


def make_experiment(
    tmp_path: Path, *, broken: bool = False, trials: int = 3, storage: bool = True
) -> tuple[Path, Path]:
    context = tmp_path / "code"
    (context / "data").mkdir(parents=True)
    (context / "train.py").write_text(TRAIN)
    (context / "data" / "big.bin").write_bytes(b"x" * 1000)
    (context / ".detignore").write_text("data/big.bin\n")
    config = tmp_path / "config.yaml"
    storage_keys = f"""
            checkpoint_storage:
              type: shared_fs
              host_path: {tmp_path / "checkpoints"}
            """
    config.write_text(
        textwrap.dedent(
            f"""
            name: local-mode
            entrypoint: python3 train.py
            hyperparameters:
              x: {{type: double, minval: 1, maxval: 2}}
              broken: {str(broken).lower()}
            searcher:
              name: random
              metric: loss
              max_trials: {trials}
              max_length: {{batches: {FULL_LENGTH}}}
            """
            + (storage_keys if storage else "")
        )
    )
    return config, context


def assay_cli(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The ``assay`` command with no cluster: its home and sign-ins in ``tmp_path``."""
    env = {
        **os.environ,
        "ASSAY_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "COLUMNS": "160",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("ASSAY_MASTER", None)
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def run_wrapper(
    command: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(command), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def local_master_is_gone(stdout: str) -> bool:
    """No process is left of the throw-away master: none runs ``assay.api`` on its port from a
    local home (another test's master may have taken the port since, and answer on it)."""
    match = re.search(r"master http://127\.0\.0\.1:(\d+)", stdout)
    assert match, stdout
    port = ["--port", match.group(1)]
    for _, argv in argvs():
        on_port = any(argv[i : i + 2] == port for i in range(len(argv)))
        if "assay.api" in argv and on_port and any("assay-local-" in a for a in argv):
            return False
    return True


def test_test_mode_on_good_code_exits_0_showing_a_few_batches_of_metrics(tmp_path: Path) -> None:
    config, context = make_experiment(tmp_path)
    result = assay_cli(tmp_path, "e", "create", "--local", "--test-mode", str(config), str(context))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "test mode passed" in result.stdout
    trained = re.search(r"trained (\d+) batches", result.stdout)
    assert trained, out
    # A few batches, not the searcher's 400, and one trial only.
    assert 1 <= int(trained.group(1)) <= 10 < FULL_LENGTH
    assert result.stdout.count("trained ") == 1
    assert re.search(r"validation +step +\d+ +loss=", result.stdout), out
    assert re.search(r"training +step +1 +loss=1\b", result.stdout), out
    assert re.search(r"checkpoint \S+ at step \d+", result.stdout), out
    # Throw-away: checkpoints stay out of the config's storage; the local master is gone.
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())
    assert local_master_is_gone(result.stdout)


def test_test_mode_on_broken_code_exits_1_with_the_traceback(tmp_path: Path) -> None:
    config, context = make_experiment(tmp_path, broken=True)
    result = assay_cli(tmp_path, "e", "create", "--local", "--test-mode", str(config), str(context))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the trial's traceback:" in result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "in divide" in result.stderr
    # Shown as the user's file, not the agent's copy of it.
    assert f'File "{context / "train.py"}", line' in result.stderr
    assert "ZeroDivisionError: division by zero" in result.stderr
    assert "test mode failed: the trial ended ERROR" in result.stderr
    assert local_master_is_gone(result.stdout)


NNI_TRIAL = """\
import nni

x = nni.get_next_parameter()["x"]
for epoch in range(3):
    nni.report_intermediate_result(x + 1.0 / (epoch + 1))
nni.report_final_result(x)
"""

NNI_CONFIG = """\
experimentName: local-nni
searchSpace:
  x: {_type: uniform, _value: [0, 10]}
trialCommand: python3 mnist.py
trialCodeDirectory: .
trialConcurrency: 1
maxTrialNumber: 2
tuner:
  name: TPE
  classArgs: {optimize_mode: minimize}
trainingService:
  platform: local
"""


def test_test_mode_takes_an_nni_config_and_its_code_directory(tmp_path: Path) -> None:
    (tmp_path / "mnist.py").write_text(NNI_TRIAL)
    (tmp_path / "config.yml").write_text(NNI_CONFIG)
    result = assay_cli(
        tmp_path, "e", "create", "--local", "--test-mode", str(tmp_path / "config.yml")
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "read as an NNI v2 config" in result.stderr
    assert "test mode passed" in result.stdout
    # One trial: its three intermediate results and the final one, as validations.
    assert len(re.findall(r"validation +step +\d+ +default=", result.stdout)) == 4, out


BROKEN_NNI_TRIAL = """\
import nni


def train(x):
    nni.report_intermediate_result(x)
    nni.report_final_result({"loss": x})


train(nni.get_next_parameter()["x"])
"""


def test_test_mode_traceback_names_the_users_file_and_line_not_assays(tmp_path: Path) -> None:
    (tmp_path / "mnist.py").write_text(BROKEN_NNI_TRIAL)
    (tmp_path / "config.yml").write_text(NNI_CONFIG)
    result = assay_cli(
        tmp_path, "e", "create", "--local", "--test-mode", str(tmp_path / "config.yml")
    )
    assert result.returncode == 1, result.stdout + result.stderr
    shown = result.stderr.split("the trial's traceback:", 1)[1]
    user_file = tmp_path.resolve() / "mnist.py"
    assert f'File "{user_file}", line 6, in train' in shown
    assert 'nni.report_final_result({"loss": x})' in shown
    assert f'File "{user_file}", line 9, in <module>' in shown
    # The shim's frames (where the ValueError was raised) are assay's, not the user's.
    assert "shims" not in shown and "allocations" not in shown
    assert "frames inside assay left out" in shown
    assert "ValueError: final result: a dict result needs a 'default' key" in shown


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--test-mode"], "--test-mode runs only with --local"),
        (["--local", "--paused"], "--paused does not go with --local"),
        (["--local", "--json"], "--json does not go with --local"),
    ],
)
def test_flags_that_do_not_go_together_are_refused(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    config, context = make_experiment(tmp_path)
    result = assay_cli(tmp_path, "e", "create", *flags, str(config), str(context))
    assert result.returncode == 1
    assert message in result.stderr
    assert "local" not in result.stdout


def test_local_runs_the_whole_search_and_prints_the_best_trial(tmp_path: Path) -> None:
    config, context = make_experiment(tmp_path, trials=2)
    # The cluster's pool (given as an override, which applies as on a cluster) is this machine.
    pool = "--config=resources.resource_pool=gpus"
    result = assay_cli(tmp_path, "e", "create", "--local", pool, str(config), str(context))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "resources.resource_pool 'gpus' runs in this machine's pool" in result.stdout
    assert "ended COMPLETED" in result.stdout
    assert re.search(r"best trial: \d+ +loss = [\d.]+", result.stdout), out
    # The whole length this time, and the best checkpoint kept in the config's storage.
    assert f"(step {FULL_LENGTH})" in result.stdout
    assert len(list((tmp_path / "checkpoints").iterdir())) >= 1
    assert printed_checkpoint(result.stdout).parent == tmp_path / "checkpoints"
    assert local_master_is_gone(result.stdout)


def printed_checkpoint(stdout: str) -> Path:
    """The best checkpoint's directory as printed; it must outlive the command."""
    match = re.search(r"best checkpoint: \S+ \(step \d+\) in (\S+)", stdout)
    assert match, stdout
    path = Path(match.group(1))
    assert path.is_dir() and (path / "steps").is_file(), f"{path} is gone"
    return path


def test_local_without_checkpoint_storage_keeps_the_best_checkpoint_in_assay_home(
    tmp_path: Path,
) -> None:
    config, context = make_experiment(tmp_path, trials=1, storage=False)
    result = assay_cli(tmp_path, "e", "create", "--local", str(config), str(context))
    assert result.returncode == 0, result.stdout + result.stderr
    path = printed_checkpoint(result.stdout)
    assert path.parent == tmp_path / "home" / "local-checkpoints"
    assert local_master_is_gone(result.stdout)


def test_installed_det_lists_the_clusters_experiments_and_uninstall_removes_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    config, context = make_experiment(tmp_path, trials=1)
    experiment_id = cluster.submit(config.read_text(), context)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "keep-me").write_text("not ours")
    installed = cluster.cli("compat", "install-commands", "--dir", str(bin_dir), check=True)
    assert "installed det, nnictl" in installed.stdout
    env = {**cluster.env, "COLUMNS": "160", "DET_MASTER": cluster.url.removeprefix("http://")}
    env.pop("ASSAY_MASTER")
    listed = run_wrapper(bin_dir / "det", ["e", "list"], env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert re.search(rf"^\s*{experiment_id}\s+local-mode\s", listed.stdout, re.M), listed.stdout
    unmapped = run_wrapper(bin_dir / "det", ["e", "frobnicate", str(experiment_id)], env)
    assert unmapped.returncode == 1
    assert "`assay experiment`" in unmapped.stderr and unmapped.stderr.count("\n") == 1
    nni_env = {**env, "ASSAY_MASTER": cluster.url}
    # --all: like nnictl's, the list without it shows running experiments only.
    nni_listed = run_wrapper(bin_dir / "nnictl", ["experiment", "list", "--all"], nni_env)
    assert nni_listed.returncode == 0, nni_listed.stdout + nni_listed.stderr
    # Piped, the listing is plain columns, as every listing is.
    listed = nni_listed.stdout
    assert re.search(rf"^ *{experiment_id} +local-mode ", listed, re.M), listed
    # Determined's own spelling of test mode, through the wrapper (no cluster needed for it).
    tested = run_wrapper(
        bin_dir / "det",
        ["experiment", "create", str(config), str(context), "--local", "--test-mode"],
        env,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "test mode passed" in tested.stdout
    removed = cluster.cli("compat", "uninstall-commands", "--dir", str(bin_dir), check=True)
    assert "removed det, nnictl" in removed.stdout
    assert sorted(p.name for p in bin_dir.iterdir()) == ["keep-me"]


def test_install_commands_leaves_a_det_that_is_not_its_own(tmp_path: Path) -> None:
    (tmp_path / "det").write_text("#!/bin/sh\necho determined\n")
    result = assay_cli(tmp_path, "compat", "install-commands", "--dir", str(tmp_path))
    assert result.returncode == 1
    assert "exists and is not an assay wrapper" in result.stderr
    assert (tmp_path / "det").read_text() == "#!/bin/sh\necho determined\n"
    assert not (tmp_path / "nnictl").exists()
    assert (
        assay_cli(tmp_path, "compat", "uninstall-commands", "--dir", str(tmp_path)).returncode == 0
    )
    assert (tmp_path / "det").exists()


SLOW = """\
import os
import time

import assay

with open(os.environ["PID_FILE"], "w") as f:
    f.write(str(os.getpid()))
with assay.core.init() as core:
    for op in core.searcher.operations():
        print("training", flush=True)
        time.sleep(600)
"""


def test_ctrl_c_stops_the_local_cluster_its_trial_and_removes_its_files(tmp_path: Path) -> None:
    context = tmp_path / "slow"
    context.mkdir()
    (context / "train.py").write_text(SLOW)
    config, _ = make_experiment(tmp_path, trials=1)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    pid_file = tmp_path / "trial.pid"
    env = {
        **os.environ,
        "ASSAY_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TMPDIR": str(scratch),
        "PID_FILE": str(pid_file),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("ASSAY_MASTER", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli import main; main()", "e", "create", "--local",
         "--test-mode", str(config), str(context)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        wait_for("the trial to start", lambda: pid_file.exists() and pid_file.read_text())
        trial_pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted; the local cluster was stopped" in stderr
    assert "Traceback" not in stderr
    assert local_master_is_gone(stdout)
    assert not pid_alive(trial_pid)
    assert list(scratch.iterdir()) == []


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for this purpose: it runs nothing.
    with contextlib.suppress(OSError):
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:4]
    return True


def test_more_slots_per_trial_than_cores_is_refused_in_one_line(tmp_path: Path) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("the local agent offers this machine's GPUs, not its cores")
    cores = os.cpu_count() or 1
    config, context = make_experiment(tmp_path, trials=1)
    too_many = f"--config=resources.slots_per_trial={cores + 1}"
    result = assay_cli(tmp_path, "e", "create", "--local", too_many, str(config), str(context))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip() == (
        f"error: resources.slots_per_trial is {cores + 1}, but --local offers {cores} slot(s) "
        f"on this machine (one per CPU core); run it locally with --config "
        f"resources.slots_per_trial={cores}"
    )
    assert "local experiment" not in result.stdout, "nothing was submitted"
