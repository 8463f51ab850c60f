"""The OpenPAI examples: the job files are OpenPAI jobs, and the parameter-server job's scripts
train for real when started as OpenPAI would start them: separate processes that find each
other only through the PAI_* variables."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openpai"
ACCURACY = re.compile(r"final test accuracy: ([0-9.]+)")
NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
"""OpenPAI's pattern of task role names and port labels."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pai_env(
    role: str, index: int, workers: int, port: int, own_ports: bool = True
) -> dict[str, str]:
    """The variables OpenPAI gives an instance of ps-worker.yaml, on one host (without
    ``PAI_CONTAINER_HOST_ps_PORT_LIST`` unless ``own_ports``)."""
    env = {
        **os.environ,
        "PAI_JOB_NAME": "alice~ps-worker-digits",
        "PAI_USER_NAME": "alice",
        "PAI_CURRENT_TASK_ROLE_NAME": role,
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(index),
        "PAI_TASK_INDEX": str(index),
        "PAI_TASK_ROLE_COUNT": "2",
        "PAI_TASK_ROLE_LIST": "ps,worker",
        "PAI_TASK_ROLE_TASK_COUNT_ps": "1",
        "PAI_TASK_ROLE_TASK_COUNT_worker": str(workers),
        "PAI_HOST_IP_ps_0": "127.0.0.1",
        "PAI_PORT_LIST_ps_0_ps": str(port),
    }
    for i in range(workers):
        env[f"PAI_HOST_IP_worker_{i}"] = "127.0.0.1"
    if role == "ps" and own_ports:
        env["PAI_CONTAINER_HOST_ps_PORT_LIST"] = str(port)
    return env


def start(script: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, script, *args],
        cwd=EXAMPLE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"{process.args!r} did not finish in {timeout} s:\n{output}")
    return process.returncode, output


def final_accuracy(output: str) -> float:
    found = ACCURACY.findall(output)
    assert len(found) == 1, f"one final accuracy expected in:\n{output}"
    return float(found[0])


def test_a_ps_and_two_workers_converge_and_all_exit_0_even_if_the_workers_start_first() -> None:
    port = free_port()
    workers = [start("worker.py", pai_env("worker", i, 2, port)) for i in range(2)]
    time.sleep(1.0)  # the workers must keep trying until the ps listens
    ps = start("ps.py", pai_env("ps", 0, 2, port))
    started = time.monotonic()
    ps_code, ps_output = finish(ps)
    results = [finish(worker) for worker in workers]
    elapsed = time.monotonic() - started

    assert ps_code == 0, ps_output
    for code, output in results:
        assert code == 0, output
    accuracy = final_accuracy(ps_output)
    assert accuracy > 0.9, ps_output
    assert [final_accuracy(output) for _, output in results] == [accuracy, accuracy], (
        "every worker evaluates the same final model the ps holds"
    )
    assert "round 20/20" in ps_output
    for i, (_, output) in enumerate(results):
        assert f"worker {i}/2: round 1/20" in output, "workers print their progress"
    assert elapsed < 60, f"took {elapsed:.0f} s"


def test_a_worker_that_finds_no_ps_gives_up_with_a_clear_message() -> None:
    port = free_port()
    worker = start("worker.py", pai_env("worker", 0, 1, port), "--connect-timeout", "1")
    code, output = finish(worker, timeout=60)
    assert code == 1
    assert f"no ps at 127.0.0.1:{port} after 1 s" in output


def test_the_ps_fails_when_not_every_worker_comes() -> None:
    port = free_port()
    # The ps also finds its port under its cluster-wide name, PAI_PORT_LIST_ps_0_ps.
    ps = start("ps.py", pai_env("ps", 0, 2, port, own_ports=False), "--wait", "2")
    worker = start("worker.py", pai_env("worker", 0, 2, port))
    ps_code, ps_output = finish(ps, timeout=60)
    worker_code, worker_output = finish(worker, timeout=60)
    assert ps_code == 1
    assert "only 1 of 2 workers connected" in ps_output
    assert worker_code == 1, "a worker whose ps went away fails too"
    assert "lost the ps" in worker_output


def test_the_scripts_name_the_variable_they_miss_when_run_outside_a_task_role() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAI_")}
    code, output = finish(start("worker.py", env), timeout=60)
    assert code == 1
    assert "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX is not set" in output


def check_protocol_v2(job: dict[str, Any]) -> None:
    """The rules of OpenPAI's protocol schema (rest-server ``config/v2/protocol.js``) that the
    examples exercise."""
    assert job["protocolVersion"] == 2
    assert job["type"] == "job"
    assert re.fullmatch(r"[a-zA-Z0-9_-]+", job["name"])
    images = {p["name"] for p in job["prerequisites"] if p["type"] == "dockerimage"}
    for prerequisite in job["prerequisites"]:
        assert set(prerequisite) <= {"name", "type", "uri", "auth", "version", "description"}
    for name, role in job["taskRoles"].items():
        assert NAME.fullmatch(name)
        assert role["dockerImage"] in images
        assert isinstance(role.get("instances", 1), int) and role.get("instances", 1) >= 1
        resources = role["resourcePerInstance"]
        for key in ("cpu", "memoryMB", "gpu"):
            assert isinstance(resources[key], int) and resources[key] >= 0
        assert all(NAME.fullmatch(label) for label in resources.get("ports", {}))
        assert role["commands"] and all(isinstance(c, str) for c in role["commands"])


def test_hello_world_is_a_one_instance_openpai_job_without_gpus() -> None:
    job = yaml.safe_load((EXAMPLE / "hello-world.yaml").read_text())
    check_protocol_v2(job)
    (role,) = job["taskRoles"].values()
    assert role.get("instances", 1) == 1
    assert role["resourcePerInstance"] == {"cpu": 1, "memoryMB": 512, "gpu": 0}
    assert any(command.startswith("python -c") for command in role["commands"])


def test_hello_world_json_is_the_v1_form_of_a_job_without_gpus() -> None:
    job = json.loads((EXAMPLE / "hello-world.json").read_text())
    assert set(job) == {"jobName", "image", "taskRoles"}
    assert re.fullmatch(r"[A-Za-z0-9\-._~]+", job["jobName"])
    (role,) = job["taskRoles"]
    assert set(role) == {"name", "taskNumber", "cpuNumber", "memoryMB", "gpuNumber", "command"}
    assert role["gpuNumber"] == 0
    assert role["memoryMB"] <= 1024
    assert "git clone" not in role["command"] and "apt" not in role["command"]


def test_ps_worker_reserves_the_port_its_workers_look_up_and_runs_the_scripts_beside_it() -> None:
    job = yaml.safe_load((EXAMPLE / "ps-worker.yaml").read_text())
    check_protocol_v2(job)
    ps, worker = job["taskRoles"]["ps"], job["taskRoles"]["worker"]
    assert ps.get("instances", 1) == 1
    assert ps["resourcePerInstance"]["ports"] == {"ps": 1}
    assert worker["instances"] == 2
    assert ps["completion"] == {"minSucceededInstances": -1}, (
        "the ps's own end must not end the job before the workers"
    )
    assert "completion" not in worker, "the job succeeds when every worker has"
    for role, script in ((ps, "ps.py"), (worker, "worker.py")):
        assert role["commands"][0].startswith(f"python {script}")
        assert (EXAMPLE / script).is_file()
    for parameter in re.findall(r"<% \$parameters\.(\w+) %>", " ".join(ps["commands"])):
        assert parameter in job["parameters"]
