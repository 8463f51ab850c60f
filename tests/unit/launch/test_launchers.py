"""The launchers as an entrypoint runs them (``python3 -m assay.launch.NAME``): per-slot ranks
with torchrun's variables, tagged lines, a failing rank stopping the others; torchrun's command
line from the node's layout; one-line refusals where a library is missing."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.launch._layout import node_layout
from assay.launch._torchrun import torchrun_argv
from assay.launch.tensorflow import tf_config
from assay.protocol import RankLayout

SRC = Path(__file__).resolve().parents[3] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def layout(local: int = 2, first: int = 0, world: int = 2, nodes: int = 1) -> RankLayout:
    port = free_port()
    return RankLayout(
        world_size=world,
        node_rank=first // local,
        num_nodes=nodes,
        first_rank=first,
        local_world_size=local,
        master_addr="127.0.0.1",
        master_port=port,
        rendezvous_port=port + 1,
    )


def launch(
    module: str,
    args: list[str],
    node: RankLayout | None,
    timeout: float = 120,
    hidden: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``python -m assay.launch.MODULE ARGS`` with ``node``'s layout; the modules ``hidden``
    cannot be found or imported in it, as in a Python that does not have them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(SRC)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    if node is not None:
        env["ASSAY_RANK_LAYOUT"] = json.dumps(node.to_dict())
    # A module None in sys.modules is one importlib finds no spec for and cannot import.
    run = (
        f"import runpy, sys; sys.modules.update(dict.fromkeys({list(hidden)!r})); "
        f"sys.argv[0] = 'assay.launch.{module}'; "
        f"runpy.run_module('assay.launch.{module}', run_name='__main__', alter_sys=True)"
    )
    return subprocess.run(
        [sys.executable, "-c", run, *args],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


ECHO = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
    "('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'GROUP_RANK', 'ASSAY_RENDEZVOUS_PORT')}))"
)


def tagged(output: str) -> dict[int, list[str]]:
    lines: dict[int, list[str]] = {}
    for line in output.splitlines():
        assert line.startswith("[rank="), line
        tag, text = line.split("] ", 1)
        lines.setdefault(int(tag[len("[rank=") :]), []).append(text)
    return lines


def test_per_slot_starts_a_process_per_slot_with_its_ranks_variables() -> None:
    node = layout(local=2, first=2, world=4, nodes=2)
    done = launch("per_slot", ["python3", "-c", ECHO], node)
    assert done.returncode == 0, done.stderr
    seen = {rank: json.loads(text) for rank, (text,) in tagged(done.stdout).items()}
    assert seen == {
        rank: {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank - 2),
            "WORLD_SIZE": "4",
            "GROUP_RANK": "1",
            "ASSAY_RENDEZVOUS_PORT": str(node.rendezvous_port),
        }
        for rank in (2, 3)
    }


def test_per_slot_without_a_layout_runs_one_untagged_process() -> None:
    done = launch("per_slot", ["--", "python3", "-c", ECHO], None)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["RANK"] == "0"


def test_a_failing_rank_stops_the_others_and_its_code_is_the_launchers() -> None:
    script = (
        "import os, sys, time\nif os.environ['RANK'] == '1':\n    sys.exit(3)\ntime.sleep(60)\n"
    )
    done = launch("per_slot", ["python3", "-c", script], layout(local=3, world=3), timeout=30)
    assert done.returncode == 3
    assert "rank 1 failed first (exit code 3); the other ranks were stopped" in done.stderr


def test_wrap_rank_prefixes_every_line_with_the_rank_from_a_variable() -> None:
    env_rank = {"RANK": "5"}
    done = subprocess.run(
        [sys.executable, "-m", "assay.launch.wrap_rank", "RANK", "--", "python3", "-c",
         "print('a'); print('b')"],
        env={**os.environ, **env_rank, "PYTHONPATH": str(SRC)},
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[rank=5] a", "[rank=5] b"]


def test_wrap_rank_refuses_a_rank_that_is_no_number() -> None:
    done = launch("wrap_rank", ["NOPE", "true"], None)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("got 'NOPE'")
    assert "Traceback" not in done.stderr


def test_torchrun_gets_the_nodes_share_and_the_chiefs_rendezvous() -> None:
    node = RankLayout(
        world_size=4,
        node_rank=1,
        num_nodes=2,
        first_rank=2,
        local_world_size=2,
        master_addr="10.0.0.7",
        master_port=29400,
        rendezvous_port=29401,
    )
    argv = torchrun_argv(node, ["--max_restarts=0"], ["python3", "train.py", "--lr", "1"])
    assert argv[1:3] == ["-m", "torch.distributed.run"]
    at = argv.index("--no_python")
    assert argv[3:at] == [
        "--nnodes=2",
        "--node_rank=1",
        "--nproc_per_node=2",
        "--master_addr=10.0.0.7",
        "--master_port=29400",
        "--max_restarts=0",
    ]
    assert argv[at + 1 :] == [
        sys.executable, "-m", "assay.launch.wrap_rank", "RANK", "--",
        "python3", "train.py", "--lr", "1",
    ]  # fmt: skip


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_distributed_starts_every_local_rank_once() -> None:
    script = (
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "print(dist.get_rank(), dist.get_world_size())\n"
        "dist.destroy_process_group()\n"
    )
    done = launch("torch_distributed", ["python3", "-c", script], layout(local=2, world=2))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = tagged("\n".join(ln for ln in done.stdout.splitlines() if ln.startswith("[rank=")))
    assert lines == {0: ["0 2"], 1: ["1 2"]}


@pytest.mark.parametrize(
    "argv",
    [["--", "--trial", "model_def:MyTrial"], ["--trial", "model_def:MyTrial"]],
)
def test_a_trial_class_given_with_trial_is_trained_by_the_harness(argv: list[str]) -> None:
    from assay.launch._cli import split_command

    _, command = split_command("torch_distributed", argv)
    assert command == [sys.executable, "-m", "determined.exec.harness", "model_def:MyTrial"]


def test_trial_without_a_class_is_refused_in_one_line() -> None:
    done = launch("torch_distributed", ["--", "--trial"], None)
    assert done.returncode == 2
    assert "--trial needs a Trial class" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("module", ["deepspeed", "horovod", "tensorflow"])
def test_a_launcher_whose_library_is_missing_says_so_in_one_line(module: str) -> None:
    done = launch(module, ["python3", "train.py"], None, hidden=(module,))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"{module}: {module} is not installed in this trial's environment")


def test_tf_config_names_every_node_and_this_ones_index() -> None:
    node = RankLayout(
        world_size=4, node_rank=1, num_nodes=2, first_rank=2, local_world_size=2,
        master_addr="10.0.0.1", master_port=29400, rendezvous_port=29401,
    )  # fmt: skip
    config: dict[str, Any] = tf_config(node, ["10.0.0.1", "10.0.0.2"])
    assert config == {
        "cluster": {"worker": ["10.0.0.1:29400", "10.0.0.2:29400"]},
        "task": {"type": "worker", "index": 1},
    }


def test_a_garbled_layout_variable_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_RANK_LAYOUT", '{"world_size": 2}')
    with pytest.raises(Exception, match="ASSAY_RANK_LAYOUT is not a rank layout"):
        node_layout()


def test_a_signal_to_the_launcher_alone_reaches_its_processes(tmp_path: Path) -> None:
    """torchrun signals its worker (a wrap_rank) alone; the command under it must end too."""
    script = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(PYTHONPATH=str(SRC), ASSAY_RANK_LAYOUT=json.dumps(layout(local=2).to_dict()))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "assay.launch.per_slot", sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert launcher.stdout is not None
    pids = [int(launcher.stdout.readline().split()[-1]) for _ in range(2)]
    launcher.terminate()  # this process only, not its group
    assert launcher.wait(timeout=30) == -15
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
